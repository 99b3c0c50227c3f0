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
 *   that over simulated days);
 * - failures: over the whole run, the cycles that failed (a store failure, "could not be stored",
 *   counts) and the ticks skipped; and the cycles missing from the window (ticks × accounts minus
 *   the cycles counted). All three should be 0.
 *
 * `--replicas N` (PostgreSQL): N `boxwatch run` processes with a `cluster:` section on the same
 * database (docs/operations.md, "Running replicas"); the window starts once they have balanced
 * the accounts. CPU is summed over them and also given per replica, with the accounts it leads.
 * `--cpu-prof DIR` writes a V8 CPU profile of the (first) daemon into DIR when it exits.
 *
 *   npm run build && node dist/bench/load.bench.js [--boxes 1000,10000,100000] [--accounts 20]
 *     [--cycles 6] [--store sqlite,postgres] [--url postgres://user@host:port/postgres]
 *     [--replicas 1] [--cpu-prof DIR]
 *
 * PostgreSQL needs --url (a server where the bench may create databases; its postmaster must run
 * on this machine for its CPU to be read); without it only SQLite runs. One account is a single
 * `gateway:`; several are a `gateways:` list (acct-01, acct-02, ...: the simulator's keys KEY-1,
 * KEY-2, ...), all on the same schedule, so a tick is one cycle per account: figures are per tick.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { clockTicks, cpuSeconds, sleep, startDaemon, statusMiB, type Daemon } from './daemon.js';
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
    replicas: { type: 'string', default: '1' },
    'cpu-prof': { type: 'string' },
  },
});
const sizes = values.boxes.split(',').map(Number);
const accounts = Number(values.accounts);
const windowTicks = Number(values.cycles);
const replicas = Number(values.replicas);
const stores = values.store.split(',') as ('sqlite' | 'postgres')[];
if (sizes.some((n) => !(n > 0)) || !(windowTicks > 0) || !(accounts >= 1) || !(replicas >= 1)) throw new Error('--boxes, --cycles, --accounts and --replicas must be positive numbers');
if (replicas > 1 && stores.includes('sqlite')) throw new Error('--replicas: replicas share a PostgreSQL database (--store postgres --url ...)');

interface Counts {
  requests: number;
  /** Cycles of every outcome. */
  cycles: number;
  /** Cycles that failed (gateway or store: "could not be stored" counts here) and ticks skipped (a cycle still running). */
  failed: number;
  skipped: number;
  durationSum: number;
}

/**
 * GET, tried again after a connection reset: a daemon whose event loop was busy for longer than
 * its keep-alive timeout (100,000 boxes) closes the idle connection just as the next request
 * reuses it.
 */
async function get(url: string, attempts = 3): Promise<Response> {
  for (let i = 1; ; i++) {
    try {
      return await fetch(url);
    } catch (err) {
      if (i >= attempts) throw err;
      await sleep(1_000);
    }
  }
}

/** The counters and histogram sums of /metrics this bench reads (summed over labels, so over accounts). */
async function metrics(httpUrl: string): Promise<Counts> {
  const text = await (await get(`${httpUrl}/metrics`)).text();
  const sum = (name: string, label = ''): number =>
    text
      .split('\n')
      .filter((l) => (l.startsWith(`${name}{`) && l.includes(label)) || (label === '' && l.startsWith(`${name} `)))
      .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  return {
    requests: sum('boxwatch_gateway_requests_total'),
    cycles: sum('boxwatch_poll_cycles_total'),
    failed: sum('boxwatch_poll_cycles_total', 'outcome="failed"'),
    skipped: sum('boxwatch_poll_ticks_skipped_total'),
    durationSum: sum('boxwatch_poll_cycle_duration_seconds_sum'),
  };
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

/** One `boxwatch run` process of a run: its figures over the window. */
interface ProcessFigures {
  /** Replica id (`--replicas` > 1), else null. */
  replica: string | null;
  /** The accounts it led at the window's end. */
  leads: number;
  cpuPerTick: number;
  rssMiB: number;
  peakMiB: number;
}

interface Run {
  store: 'sqlite' | 'postgres';
  boxes: number;
  processes: ProcessFigures[];
  /** The daemons' CPU per tick, summed over the processes. */
  cpuPerTick: number;
  serverCpuPerTick: number | null;
  requestsPerTick: number;
  cycleSeconds: number;
  dbMiB: number;
  bytesPerBoxDay: number;
  windowTicks: number;
  /** Over the whole run (startup included), summed over the processes. */
  failedCycles: number;
  skippedTicks: number;
  /** Cycles missing from the window: ticks × accounts minus the cycles counted (0 when none was lost). */
  missingCycles: number;
}

/** The sum of several processes' counts. */
function total(counts: readonly Counts[]): Counts {
  const keys = ['requests', 'cycles', 'failed', 'skipped', 'durationSum'] as const;
  return Object.fromEntries(keys.map((k) => [k, counts.reduce((n, c) => n + c[k], 0)])) as unknown as Counts;
}

/** The accounts each replica leads, from its /healthz. */
async function leadership(daemons: readonly Daemon[]): Promise<string[][]> {
  return Promise.all(
    daemons.map(async (d) => ((await (await get(`${d.httpUrl}/healthz`)).json()) as { replica?: { leads: string[] } }).replica?.leads ?? []),
  );
}

/**
 * The configuration of one process: `gateways:` of the accounts (a single `gateway:` for one), and
 * with replicas a `cluster:` section with its own id.
 */
function configText(simUrl: string, store: 'sqlite' | 'postgres', dbPath: string, replicaId: string | null): string {
  const name = (n: number): string => `acct-${String(n).padStart(2, '0')}`;
  let gateways: string;
  if (accounts === 1) {
    gateways = `gateway: { base_url: "${simUrl}", secret_key: "\${BOXWATCH_SECRET_KEY}", concurrency: 16 }`;
  } else {
    const lines = ['gateways:'];
    for (let n = 1; n <= accounts; n++) lines.push(`  - { name: ${name(n)}, base_url: "${simUrl}", secret_key: "\${KEY_${n}}", concurrency: 16 }`);
    gateways = lines.join('\n');
  }
  return `${gateways}
poll: { schedule: "*/${SCHEDULE_S} * * * * *" }
storage: { ${store === 'sqlite' ? `path: "${dbPath}"` : 'url: "${BOXWATCH_DATABASE_URL}"'} }
http: { listen: "127.0.0.1:0" }
log: { level: info, format: json }
${replicaId === null ? '' : `cluster: { replica_id: ${replicaId} }\n`}`;
}

/** The account keys the configurations name (the simulator's keys). */
function accountKeys(): Record<string, string> {
  if (accounts === 1) return { BOXWATCH_SECRET_KEY: KEY };
  return Object.fromEntries(Array.from({ length: accounts }, (_, i) => [`KEY_${i + 1}`, `${KEY}-${i + 1}`]));
}

async function runOne(store: 'sqlite' | 'postgres', boxes: number, serverUrl: string | undefined): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-bench-load-'));
  const sim = await startSimProcess(Math.round(boxes / accounts), KEY, ['--seed', '7', '--accounts', String(accounts)]);
  let databaseUrl: string | undefined;
  let dbName: string | undefined;
  let postmaster: number | undefined;
  if (store === 'postgres') {
    if (serverUrl === undefined) throw new Error('PostgreSQL needs --url');
    dbName = `boxwatch_load_${boxes}_${replicas}_${Date.now()}`;
    await pgQuery(serverUrl, `CREATE DATABASE ${dbName}`);
    const u = new URL(serverUrl);
    u.pathname = `/${dbName}`;
    databaseUrl = u.toString();
    const [row] = await pgQuery<{ dir: string }>(serverUrl, "SELECT current_setting('data_directory') AS dir");
    postmaster = Number(readFileSync(join(row?.dir ?? '', 'postmaster.pid'), 'utf8').split('\n')[0]);
  }
  const dbPath = join(dir, 'boxwatch.db');
  const ids = Array.from({ length: replicas }, (_, i) => (replicas === 1 ? null : `bench-r${i + 1}`));
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
  const env = { ...accountKeys(), ...(databaseUrl !== undefined && { BOXWATCH_DATABASE_URL: databaseUrl }) };
  const started = await Promise.allSettled(
    ids.map((id, i) => {
      const configPath = join(dir, `boxwatch-${i + 1}.yaml`);
      writeFileSync(configPath, configText(sim.url, store, dbPath, id));
      return startDaemon(configPath, env, 15 * 60_000, i === 0 && values['cpu-prof'] !== undefined ? ['--cpu-prof', '--cpu-prof-dir', values['cpu-prof']] : []);
    }),
  );
  const daemons = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const all = async (): Promise<Counts> => total(await Promise.all(daemons.map((d) => metrics(d.httpUrl))));
  try {
    for (const s of started) if (s.status === 'rejected') throw s.reason;
    if (replicas > 1) {
      // Replicas balance the accounts among themselves (docs/operations.md, "Running replicas").
      const quota = Math.floor(accounts / replicas);
      while (!(await leadership(daemons)).every((leads) => leads.length >= quota)) await sleep(1_000);
    }
    // One more tick: the first cycles fetch every box's details (and an account that changed
    // replica is loaded by its new leader).
    const first = await all();
    while ((await all()).cycles < first.cycles + accounts) await sleep(1_000);
    // The window starts just after a tick's cycles are done.
    const m0 = await all();
    const bytes0 = await dbBytes();
    const cpu0 = daemons.map((d) => cpuSeconds(d.pid, ticks));
    const server0 = postmaster === undefined ? 0 : clusterCpu(postmaster, ticks);
    const t0 = performance.now();
    await sleep(windowTicks * SCHEDULE_S * 1000);
    // Every account's cycle of the last tick, unless some are lost (then wait at most two more ticks).
    const deadline = performance.now() + 2 * SCHEDULE_S * 1000;
    while ((await all()).cycles < m0.cycles + windowTicks * accounts && performance.now() < deadline) await sleep(1_000);
    const cpu = daemons.map((d, i) => cpuSeconds(d.pid, ticks) - (cpu0[i] as number));
    const server = postmaster === undefined ? null : clusterCpu(postmaster, ticks) - server0;
    const wall = (performance.now() - t0) / 1000;
    const m1 = await all();
    const bytes1 = await dbBytes();
    const leads = replicas > 1 ? await leadership(daemons) : [Array.from({ length: accounts }, String)];
    const n = Math.min(windowTicks, (m1.cycles - m0.cycles) / accounts); // ticks
    return {
      store,
      boxes,
      processes: daemons.map((d, i) => ({
        replica: ids[i] ?? null,
        leads: leads[i]?.length ?? 0,
        cpuPerTick: (cpu[i] as number) / n,
        rssMiB: statusMiB(d.pid, 'VmRSS'),
        peakMiB: statusMiB(d.pid, 'VmHWM'),
      })),
      cpuPerTick: cpu.reduce((a, b) => a + b, 0) / n,
      serverCpuPerTick: server === null ? null : server / n,
      requestsPerTick: (m1.requests - m0.requests) / n,
      cycleSeconds: (m1.durationSum - m0.durationSum) / (m1.cycles - m0.cycles),
      dbMiB: bytes1 / 2 ** 20,
      bytesPerBoxDay: ((bytes1 - bytes0) / boxes) * (DAY_S / wall),
      windowTicks: n,
      failedCycles: m1.failed,
      skippedTicks: m1.skipped,
      missingCycles: Math.max(0, windowTicks * accounts - (m1.cycles - m0.cycles)),
    };
  } finally {
    for (const daemon of daemons) {
      await daemon.stop();
      if (daemon.problems.length > 0) console.log(`  daemon warnings (${store}, ${boxes} boxes): ${[...new Set(daemon.problems)].join('; ')}`);
    }
    sim.stop();
    if (dbName !== undefined && serverUrl !== undefined) await pgQuery(serverUrl, `DROP DATABASE ${dbName}`).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

const wanted = stores.filter((s) => s === 'sqlite' || values.url !== undefined);
if (wanted.length < stores.length) console.log('load: PostgreSQL skipped (needs --url postgres://... of a server on this machine where databases may be created)');
console.log(
  `\n### load: ${accounts} account(s), ${SCHEDULE_S} s schedule, ${replicas === 1 ? 'one process' : `${replicas} replicas`}, ${windowTicks} ticks measured per run (after the first cycles); load average ${loadavg().map((l) => l.toFixed(1)).join(', ')}`,
);
console.log('| store | boxes | daemon CPU / tick | database server CPU / tick | requests / tick | one account\'s cycle | RSS end (peak) | database size | growth / box / day | failed cycles, skipped ticks, missing cycles |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
const ms = (s: number): string => `${(s * 1000).toFixed(0)} ms`;
const perReplica: string[] = [];
for (const store of wanted) {
  for (const boxes of sizes) {
    const r = await runOne(store, boxes, values.url);
    const rss = r.processes.reduce((n, p) => n + p.rssMiB, 0);
    const peak = r.processes.reduce((n, p) => n + p.peakMiB, 0);
    console.log(
      `| ${r.store} | ${r.boxes.toLocaleString('en-US')} | ${ms(r.cpuPerTick)} | ${r.serverCpuPerTick === null ? '–' : ms(r.serverCpuPerTick)} | ${r.requestsPerTick.toFixed(0)} | ${ms(r.cycleSeconds)} |` +
        ` ${rss.toFixed(0)} MiB (${peak.toFixed(0)}) | ${r.dbMiB.toFixed(1)} MiB | ${(r.bytesPerBoxDay / 1024).toFixed(1)} KB | ${r.failedCycles}, ${r.skippedTicks}, ${r.missingCycles} |`,
    );
    if (replicas > 1) {
      for (const p of r.processes) {
        perReplica.push(`| ${r.store} | ${r.boxes.toLocaleString('en-US')} | ${p.replica} | ${p.leads} | ${ms(p.cpuPerTick)} | ${p.rssMiB.toFixed(0)} MiB (${p.peakMiB.toFixed(0)}) |`);
      }
    }
  }
}
if (perReplica.length > 0) {
  console.log('\nEach replica (CPU per tick of all accounts; the total above is their sum):');
  console.log('| store | boxes | replica | accounts led | CPU / tick | RSS end (peak) |');
  console.log('|---|---:|---|---:|---:|---:|');
  for (const line of perReplica) console.log(line);
}
