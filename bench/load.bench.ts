/**
 * Load: `boxwatch run` (a child process, the built dist/src/main.js) watching a large fleet at a
 * 30 s schedule, on SQLite and on PostgreSQL, for several fleet sizes (how the cost grows). The
 * simulator runs in another child process (`boxwatch sim`, its CPU not counted), serving the
 * fleet as `--accounts` accounts of boxes/accounts boxes each.
 *
 * After the daemon's first successful cycle and one more tick (the first cycles fetch every box's
 * details), a window of `--cycles` ticks is measured:
 * - CPU per cycle: the daemon's utime + stime (/proc/<pid>/stat, all threads); on PostgreSQL also
 *   the database server's (the postmaster, its live backends, and its reaped ones: cutime +
 *   cstime), so the cost of the database is counted on both sides;
 * - requests per cycle (`boxwatch_gateway_requests_total`), cycle duration
 *   (`boxwatch_poll_cycle_duration_seconds`), from /metrics at the window's ends;
 * - memory: the daemon's VmRSS at the end and VmHWM (peak, startup included);
 * - database bytes: the size after the window, and its growth over the window per box per day
 *   (SQLite: pages in use; PostgreSQL: pg_database_size, WAL not included) — a live-writing rate
 *   over a few minutes, open hour rows included, not the settled size (storage.bench measures
 *   that over simulated days).
 *
 *   npm run build && node dist/bench/load.bench.js [--boxes 1000,10000,100000] [--accounts 20]
 *     [--cycles 6] [--store sqlite,postgres] [--url postgres://user@host:port/postgres]
 *
 * PostgreSQL needs --url (a server where the bench may create databases; its postmaster must run
 * on this machine for its CPU to be read); without it only SQLite runs. One account is a single
 * `gateway:`; several are a `gateways:` list (acct-01, acct-02, ...: the simulator's keys KEY-1,
 * KEY-2, ...), all on the same schedule, so a tick is one cycle per account: figures are per tick.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { clockTicks, cpuSeconds, sleep, startDaemon, statusMiB } from './daemon.js';
import { startSimProcess } from './sim-process.js';
import { pgQuery } from './storage-helpers.js';

const KEY = 'bench-load-key';
const SCHEDULE_S = 30;
const DAY_S = 86_400;

const { values } = parseArgs({
  options: {
    boxes: { type: 'string', default: '1000,10000,100000' },
    accounts: { type: 'string', default: '20' },
    cycles: { type: 'string', default: '6' },
    store: { type: 'string', default: 'sqlite,postgres' },
    url: { type: 'string' },
  },
});
const sizes = values.boxes.split(',').map(Number);
const accounts = Number(values.accounts);
const cycles = Number(values.cycles);
const stores = values.store.split(',') as ('sqlite' | 'postgres')[];
if (sizes.some((n) => !(n > 0)) || !(cycles > 0) || !(accounts >= 1)) throw new Error('--boxes, --cycles and --accounts must be positive numbers');

/** The counters and histogram sums of /metrics this bench reads (summed over labels, so over accounts). */
async function metrics(httpUrl: string): Promise<{ requests: number; cycles: number; durationSum: number }> {
  const text = await (await fetch(`${httpUrl}/metrics`)).text();
  const sum = (name: string): number =>
    text
      .split('\n')
      .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
      .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  return { requests: sum('boxwatch_gateway_requests_total'), cycles: sum('boxwatch_poll_cycles_total'), durationSum: sum('boxwatch_poll_cycle_duration_seconds_sum') };
}

/** CPU seconds of a PostgreSQL cluster: the postmaster, its live children, and its reaped children. */
function clusterCpu(postmaster: number, ticks: number): number {
  const stat = readFileSync(`/proc/${postmaster}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  let total = (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / ticks; // utime stime cutime cstime
  const children = readFileSync(`/proc/${postmaster}/task/${postmaster}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  for (const child of children) {
    try {
      total += cpuSeconds(Number(child), ticks);
    } catch {
      // ended meanwhile: counted in cutime from the next read on
    }
  }
  return total;
}

interface Run {
  store: 'sqlite' | 'postgres';
  boxes: number;
  cpuPerCycle: number;
  serverCpuPerCycle: number | null;
  requestsPerCycle: number;
  cycleSeconds: number;
  rssMiB: number;
  peakMiB: number;
  dbMiB: number;
  bytesPerBoxDay: number;
  windowCycles: number;
}

async function runOne(store: 'sqlite' | 'postgres', boxes: number, serverUrl: string | undefined): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-bench-load-'));
  const sim = await startSimProcess(Math.round(boxes / accounts), KEY, ['--seed', '7', '--accounts', String(accounts)]);
  let databaseUrl: string | undefined;
  let dbName: string | undefined;
  let postmaster: number | undefined;
  if (store === 'postgres') {
    if (serverUrl === undefined) throw new Error('PostgreSQL needs --url');
    dbName = `boxwatch_load_${boxes}_${Date.now()}`;
    await pgQuery(serverUrl, `CREATE DATABASE ${dbName}`);
    const u = new URL(serverUrl);
    u.pathname = `/${dbName}`;
    databaseUrl = u.toString();
    const [row] = await pgQuery<{ dir: string }>(serverUrl, "SELECT current_setting('data_directory') AS dir");
    postmaster = Number(readFileSync(join(row?.dir ?? '', 'postmaster.pid'), 'utf8').split('\n')[0]);
  }
  const dbPath = join(dir, 'boxwatch.db');
  const configPath = join(dir, 'boxwatch.yaml');
  const name = (n: number): string => `acct-${String(n).padStart(2, '0')}`;
  const keys: Record<string, string> = {};
  let gateways: string;
  if (accounts === 1) {
    keys.BOXWATCH_SECRET_KEY = KEY;
    gateways = `gateway: { base_url: "${sim.url}", secret_key: "\${BOXWATCH_SECRET_KEY}", concurrency: 16 }`;
  } else {
    const lines = ['gateways:'];
    for (let n = 1; n <= accounts; n++) {
      keys[`KEY_${n}`] = `${KEY}-${n}`;
      lines.push(`  - { name: ${name(n)}, base_url: "${sim.url}", secret_key: "\${KEY_${n}}", concurrency: 16 }`);
    }
    gateways = lines.join('\n');
  }
  writeFileSync(
    configPath,
    `${gateways}
poll: { schedule: "*/${SCHEDULE_S} * * * * *" }
storage: { ${store === 'sqlite' ? `path: "${dbPath}"` : 'url: "${BOXWATCH_DATABASE_URL}"'} }
http: { listen: "127.0.0.1:0" }
log: { level: info, format: json }
`,
  );
  const dbBytes = async (): Promise<number> => {
    if (store === 'sqlite') {
      // The pages in use as a reader sees them (WAL frames included, free pages not): the file
      // and its WAL grow in steps (checkpoints), which would swamp a few minutes' growth.
      const db = new Database(dbPath, { readonly: true });
      try {
        const pragma = (name: string): number => db.pragma(name, { simple: true }) as number;
        return (pragma('page_count') - pragma('freelist_count')) * pragma('page_size');
      } finally {
        db.close();
      }
    }
    const [row] = await pgQuery<{ n: string }>(databaseUrl as string, 'SELECT pg_database_size(current_database()) AS n');
    return Number(row?.n);
  };
  const ticks = clockTicks();
  const daemon = await startDaemon(configPath, { ...keys, ...(databaseUrl !== undefined && { BOXWATCH_DATABASE_URL: databaseUrl }) }, 15 * 60_000);
  try {
    // One more tick: the first cycles fetch every box's details.
    const first = await metrics(daemon.httpUrl);
    while ((await metrics(daemon.httpUrl)).cycles < first.cycles + accounts) await sleep(1_000);
    // The window starts just after a tick's cycle is done.
    const m0 = await metrics(daemon.httpUrl);
    const bytes0 = await dbBytes();
    const cpu0 = cpuSeconds(daemon.pid, ticks);
    const server0 = postmaster === undefined ? 0 : clusterCpu(postmaster, ticks);
    const t0 = performance.now();
    await sleep(cycles * SCHEDULE_S * 1000);
    while ((await metrics(daemon.httpUrl)).cycles < m0.cycles + cycles * accounts) await sleep(1_000);
    const cpu = cpuSeconds(daemon.pid, ticks) - cpu0;
    const server = postmaster === undefined ? null : clusterCpu(postmaster, ticks) - server0;
    const wall = (performance.now() - t0) / 1000;
    const m1 = await metrics(daemon.httpUrl);
    const bytes1 = await dbBytes();
    const n = (m1.cycles - m0.cycles) / accounts; // ticks
    return {
      store,
      boxes,
      cpuPerCycle: cpu / n,
      serverCpuPerCycle: server === null ? null : server / n,
      requestsPerCycle: (m1.requests - m0.requests) / n,
      cycleSeconds: (m1.durationSum - m0.durationSum) / (m1.cycles - m0.cycles),
      rssMiB: statusMiB(daemon.pid, 'VmRSS'),
      peakMiB: statusMiB(daemon.pid, 'VmHWM'),
      dbMiB: bytes1 / 2 ** 20,
      bytesPerBoxDay: ((bytes1 - bytes0) / boxes) * (DAY_S / wall),
      windowCycles: n,
    };
  } finally {
    await daemon.stop();
    if (daemon.problems.length > 0) console.log(`  daemon warnings (${store}, ${boxes} boxes): ${[...new Set(daemon.problems)].join('; ')}`);
    sim.stop();
    if (dbName !== undefined && serverUrl !== undefined) await pgQuery(serverUrl, `DROP DATABASE ${dbName}`).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

const wanted = stores.filter((s) => s === 'sqlite' || values.url !== undefined);
if (wanted.length < stores.length) console.log('load: PostgreSQL skipped (needs --url postgres://... of a server on this machine where databases may be created)');
console.log(`\n### load: ${accounts} account(s), ${SCHEDULE_S} s schedule, ${cycles} ticks measured per run (after the first cycles)`);
console.log('| store | boxes | daemon CPU / tick | database server CPU / tick | requests / tick | one account\'s cycle | RSS end (peak) | database size | growth / box / day |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const store of wanted) {
  for (const boxes of sizes) {
    const r = await runOne(store, boxes, values.url);
    const ms = (s: number): string => `${(s * 1000).toFixed(0)} ms`;
    console.log(
      `| ${r.store} | ${r.boxes.toLocaleString('en-US')} | ${ms(r.cpuPerCycle)} | ${r.serverCpuPerCycle === null ? '–' : ms(r.serverCpuPerCycle)} | ${r.requestsPerCycle.toFixed(0)} | ${ms(r.cycleSeconds)} |` +
        ` ${r.rssMiB.toFixed(0)} MiB (${r.peakMiB.toFixed(0)}) | ${r.dbMiB.toFixed(1)} MiB | ${(r.bytesPerBoxDay / 1024).toFixed(1)} KB |`,
    );
  }
}
