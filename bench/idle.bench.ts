/**
 * Idle cost of the daemon: CPU and memory of `boxwatch run` (a child process, the built
 * dist/src/main.js) watching 1,000 simulated boxes at a 30 s schedule, with the default rules, the
 * console notifier and the HTTP endpoints on. The simulator runs in this process (real clock,
 * speed 1), so its work is not counted. After the first successful cycle, the child's CPU time
 * (utime + stime of /proc/<pid>/stat, all threads) and resident memory (VmRSS of
 * /proc/<pid>/status, sampled every 10 s; VmHWM for the peak) are read over the window; "no poll
 * due" is the CPU and the wakeups (context switches of the main thread and of all threads) of the
 * quiet part of each 30 s period (from 8 s after a tick to 2 s before the next). Also printed: the
 * CPU of each 30 s period (all threads, and the main thread), and the peak RSS when the first cycle
 * is done (start-up and first cycle) apart from the window's.
 *
 *   npm run build && node dist/bench/idle.bench.js [--minutes 10] [--boxes 1000] [--after 0] [--lead S] [--database new|restart|stale] [--node-args='...']
 *   (--after N: the window starts N minutes after the first cycle instead of right after it. V8
 *   compiles the daemon's cycle code over its first tens of cycles, about half of its CPU in the
 *   first 10 minutes; --after 20 measures a daemon past that)
 *   (--node-args='--cpu-prof --cpu-prof-dir=DIR': options for node before the daemon's script, here
 *   a CPU profile of the daemon, written when it stops)
 *   (--lead S: the daemon starts S seconds before a tick of the schedule; by default whenever the
 *   bench starts. The start-up's peak RSS can depend on how soon the first cycle follows the start)
 *   (--database: what the daemon starts on. `new` (the default): a new database, so that its first
 *   cycle fetches the details of every box, a first start. `restart`: the database of a daemon
 *   that ran until its first cycle was done and was stopped, so that the first cycle fetches only
 *   the details due (about 100), a restart. `stale`: the same database with every box's details
 *   made a day old (the rest of it as after a short stop), so that the first cycle fetches them
 *   all again, as after a downtime longer than poll.details_every. In every case the daemon is
 *   asked nothing until its first cycle, which its log says (`polling ok`); the window starts
 *   there. Printed as well: the RSS samples from the window's second minute on, the daemon
 *   watching past the first cycle's peak)
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { startSimulator } from '../src/sim/server.js';
import { clockTicks, cpuSeconds, sleep, startDaemon, statusMiB } from './daemon.js';

const KEY = 'bench-idle-key';
const SAMPLE_MS = 10_000;
const SCHEDULE_S = 30;

/**
 * Context switches (voluntary + involuntary) of the main thread and of all threads: a thread
 * that sleeps in epoll until its next timer wakes about once per timer period, so wakeups per
 * second with no poll due show the shortest timer (a 10 ms timer: 100 a second).
 */
function contextSwitches(pid: number): { main: number; all: number } {
  const switches = (statusPath: string): number => {
    const text = readFileSync(statusPath, 'utf8');
    const get = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);
    return get('voluntary_ctxt_switches') + get('nonvoluntary_ctxt_switches');
  };
  let all = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      all += switches(`/proc/${pid}/task/${task}/status`);
    } catch {
      // the thread ended meanwhile
    }
  }
  return { main: switches(`/proc/${pid}/task/${pid}/status`), all };
}

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    boxes: { type: 'string', default: '1000' },
    after: { type: 'string', default: '0' },
    'node-args': { type: 'string', default: '' },
    lead: { type: 'string' },
    database: { type: 'string', default: 'new' },
  },
});
const minutes = Number(values.minutes);
const boxes = Number(values.boxes);
const afterMinutes = Number(values.after);
const leadSeconds = values.lead === undefined ? undefined : Number(values.lead);
if (!(minutes > 0) || !(boxes > 0) || !(afterMinutes >= 0)) throw new Error('--minutes and --boxes must be positive numbers, --after zero or more');
if (leadSeconds !== undefined && !(leadSeconds >= 0 && leadSeconds < SCHEDULE_S)) throw new Error(`--lead must be 0 to ${SCHEDULE_S} seconds`);
const database = values.database;
if (database !== 'new' && database !== 'restart' && database !== 'stale') throw new Error('--database must be new, restart or stale');

const dir = mkdtempSync(join(tmpdir(), 'boxwatch-bench-idle-'));
const sim = await startSimulator({ port: 0, key: KEY, devices: boxes, seed: 7, speed: 1 });
const configPath = join(dir, 'boxwatch.yaml');
writeFileSync(
  configPath,
  `gateway: { base_url: "${sim.url}", secret_key: "\${BOXWATCH_SECRET_KEY}" }
poll: { schedule: "*/${SCHEDULE_S} * * * * *" }
storage: { path: "${join(dir, 'boxwatch.db')}" }
http: { listen: "127.0.0.1:0" }
log: { level: info, format: json }
`,
);
const ticks = clockTicks();
const nodeArgs = values['node-args'].split(' ').filter((a) => a !== '');
if (database !== 'new') {
  // A daemon's first start, until its first cycle is done: the database the measured one restarts on.
  const first = await startDaemon(configPath, { BOXWATCH_SECRET_KEY: KEY }, 120_000);
  const code = await first.stop();
  if (code !== 0) throw new Error(`the daemon that prepared the database exited with ${code}: ${first.problems.join('; ')}`);
  if (database === 'stale') {
    const db = new Database(join(dir, 'boxwatch.db'));
    db.prepare('UPDATE boxes SET details_at = details_at - ?').run(86_400_000);
    db.close();
  }
}
if (leadSeconds !== undefined) {
  const untilTick = SCHEDULE_S * 1000 - (Date.now() % (SCHEDULE_S * 1000));
  await sleep((untilTick - leadSeconds * 1000 + SCHEDULE_S * 1000) % (SCHEDULE_S * 1000));
}
const started = performance.now();
// Its first cycle is read from its log, not asked over HTTP: whatever the daemon does before that
// cycle counted in how large V8's young generation was when it came (the start-up peak, above,
// before the executable held it), and is not what is measured.
const daemon = await startDaemon(configPath, { BOXWATCH_SECRET_KEY: KEY }, 120_000, nodeArgs, 'first-cycle');
try {
  const { pid } = daemon;
  const startupCpu = cpuSeconds(pid, ticks);
  const startupWall = (performance.now() - started) / 1000;
  const startupPeak = statusMiB(pid, 'VmHWM');
  await sleep(afterMinutes * 60_000);
  const rssStart = statusMiB(pid, 'VmRSS');
  const cpu0 = cpuSeconds(pid, ticks);
  const t0 = performance.now();
  const rss: number[] = [rssStart];
  /** The samples from the window's second minute on: the daemon watching, past the first cycle's peak. */
  const watching: number[] = [];
  const end = t0 + minutes * 60_000;
  // "No poll due": in every 30 s period, from 8 s after the tick (the cycle and the gateway
  // connections' keep-alive are over) to 2 s before the next one.
  let quietCpu = 0;
  let quietWall = 0;
  let quietWakeMain = 0;
  let quietWakeAll = 0;
  let nextSample = performance.now() + SAMPLE_MS;
  // CPU of each 30 s period (2 s before a tick to 2 s before the next), all threads and the main
  // one: the first minutes' curve (V8's first compiles, the collections after the first cycle).
  const periods: { cpu: number; main: number }[] = [];
  let periodStart = { cpu: cpu0, main: cpuSeconds(pid, ticks, pid) };
  while (performance.now() < end) {
    const intoPeriod = Date.now() % (SCHEDULE_S * 1000);
    const quietStart = 8_000;
    const quietEnd = SCHEDULE_S * 1000 - 2_000;
    if (intoPeriod < quietStart) await sleep(quietStart - intoPeriod);
    else if (intoPeriod < quietEnd && performance.now() + (quietEnd - intoPeriod) < end) {
      const c0 = cpuSeconds(pid, ticks);
      const s0 = contextSwitches(pid);
      const w0 = performance.now();
      await sleep(quietEnd - intoPeriod);
      quietCpu += cpuSeconds(pid, ticks) - c0;
      quietWall += (performance.now() - w0) / 1000;
      const s1 = contextSwitches(pid);
      quietWakeMain += s1.main - s0.main;
      quietWakeAll += s1.all - s0.all;
      const now = { cpu: cpuSeconds(pid, ticks), main: cpuSeconds(pid, ticks, pid) };
      periods.push({ cpu: now.cpu - periodStart.cpu, main: now.main - periodStart.main });
      periodStart = now;
    } else await sleep(Math.max(1, SCHEDULE_S * 1000 - intoPeriod + 10));
    if (performance.now() >= nextSample) {
      const sample = statusMiB(pid, 'VmRSS');
      rss.push(sample);
      if (performance.now() - t0 >= 60_000) watching.push(sample);
      nextSample += SAMPLE_MS;
    }
  }
  const wall = (performance.now() - t0) / 1000;
  const cpu = cpuSeconds(pid, ticks) - cpu0;
  const peak = statusMiB(pid, 'VmHWM');
  const cycles = wall / SCHEDULE_S;
  const mib = (x: number): string => `${x.toFixed(0)} MiB`;
  console.log(
    `${boxes} boxes, ${SCHEDULE_S} s schedule, ${(wall / 60).toFixed(1)} min from ${afterMinutes} min after the first cycle: ` +
      `CPU ${((cpu / wall) * 100).toFixed(2)}% of one core (${cpu.toFixed(1)} s, ~${((cpu / cycles) * 1000).toFixed(0)} ms per cycle)` +
      ` | RSS start ${mib(rssStart)}, end ${mib(rss.at(-1) ?? NaN)}, min ${mib(Math.min(...rss))}, max ${mib(Math.max(...rss))}, peak (VmHWM, startup included) ${mib(peak)}, from the second minute ${watching.length === 0 ? 'none (--minutes 1)' : `${mib(Math.min(...watching))} to ${mib(Math.max(...watching))}`}` +
      ` | with no poll due: CPU ${((quietCpu / quietWall) * 100).toFixed(3)}% of one core (${quietCpu.toFixed(2)} s over ${quietWall.toFixed(0)} s),` +
      ` wakeups ${(quietWakeMain / quietWall).toFixed(2)}/s on the main thread, ${(quietWakeAll / quietWall).toFixed(2)}/s over all threads` +
      ` | ${database} database; start until the first cycle (on the first 30 s tick) done: ${startupWall.toFixed(1)} s wall, ${startupCpu.toFixed(1)} s CPU, peak RSS (VmHWM) ${mib(startupPeak)}; the first cycle ${daemon.firstCycleMs ?? '?'} ms (its log)`,
  );
  const ms = (x: number): string => (x * 1000).toFixed(0);
  console.log(`  CPU per 30 s period in ms (of it main thread; the first from the window's start): ${periods.map((p) => `${ms(p.cpu)} (${ms(p.main)})`).join(', ')}`);
  if (daemon.problems.length > 0) console.log(`  daemon warnings: ${[...new Set(daemon.problems)].join('; ')}`);
} finally {
  await daemon.stop();
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
}
