/**
 * Helpers of the daemon benchmarks: `boxwatch run` as a child process (the built
 * dist/src/main.js) on a configuration in a temporary folder, its HTTP address read from its JSON
 * logs, and readiness as /healthz answering 200 (a successful cycle happened), or, asking the
 * daemon nothing, its own first successful cycle as its log says it.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const MAIN = join(here, '..', 'src', 'main.js');

export interface Daemon {
  child: ChildProcess;
  pid: number;
  /** http://127.0.0.1:PORT of /healthz and /metrics ('' when the daemon serves no HTTP). */
  httpUrl: string;
  /** Log records at warn level and above, for the report. */
  problems: string[];
  /** How long the first successful cycle took, as its `polling ok` line says (ms); undefined until then. */
  readonly firstCycleMs: number | undefined;
  /** SIGTERM, then waits for the exit; resolves with the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Starts `boxwatch run --config <configPath>` (the configuration must set `http.listen` with port 0
 * and `log.format: json`) and resolves once /healthz answers 200, or with `ready: 'first-cycle'` at
 * this process's first successful cycle, its `polling ok` log line (src/poller/heartbeat.ts), with
 * no request made (/healthz answers at once on a database with a recent cycle, and each request is
 * work the daemon does before its first cycle). Either within `timeoutMs`. `nodeArgs` go to node
 * before the script (e.g. `--cpu-prof`).
 */
export async function startDaemon(
  configPath: string,
  env: NodeJS.ProcessEnv,
  timeoutMs = 60_000,
  nodeArgs: readonly string[] = [],
  ready: 'healthy' | 'first-cycle' = 'healthy',
): Promise<Daemon> {
  const child = spawn(process.execPath, [...nodeArgs, MAIN, 'run', '--config', configPath], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const problems: string[] = [];
  let onUrl: (url: string) => void = () => undefined;
  const urlKnown = new Promise<string>((resolve) => (onUrl = resolve));
  let onFirstCycle: () => void = () => undefined;
  let firstCycleMs: number | undefined;
  const firstCycle = new Promise<void>((resolve) => (onFirstCycle = resolve));
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    if (!line.startsWith('{')) return; // console notifier lines
    const record = JSON.parse(line) as { level: number; msg: string; url?: string; ms?: number };
    if (record.msg.endsWith('http endpoints listening') && record.url) onUrl(record.url);
    if (record.msg.startsWith('polling ok')) {
      firstCycleMs ??= record.ms;
      onFirstCycle();
    }
    if (record.level >= 40) problems.push(record.msg);
  });
  const deadline = Date.now() + timeoutMs;
  const failEarly = exited.then((code) => {
    throw new Error(`boxwatch run exited with ${code} before it was ready`);
  });
  failEarly.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(ready === 'first-cycle' ? 'no http address or successful cycle logged in time' : 'no http address logged')), timeoutMs);
  });
  let httpUrl: string;
  try {
    // A daemon with `http: false` logs no address: its first cycle is enough (httpUrl '').
    if (ready === 'first-cycle') {
      await Promise.race([firstCycle, failEarly, timeout]);
      httpUrl = await Promise.race([urlKnown, Promise.resolve('')]);
    } else httpUrl = await Promise.race([urlKnown, failEarly, timeout]);
  } finally {
    clearTimeout(timer);
  }
  while (ready === 'healthy') {
    const ok = await fetch(`${httpUrl}/healthz`).then((r) => r.ok, () => false);
    if (ok) break;
    if (Date.now() > deadline) throw new Error('boxwatch run did not become healthy in time');
    await Promise.race([sleep(100), failEarly]);
  }
  return {
    child,
    pid: child.pid as number,
    httpUrl,
    problems,
    get firstCycleMs() {
      return firstCycleMs;
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The q-quantile (0..1) of the values, nearest rank. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil(q * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] as number;
}

/** A `kB` line of /proc/<pid>/status, in MiB. */
export function statusMiB(pid: number, key: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** Clock ticks per second of /proc/<pid>/stat times. */
export function clockTicks(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

/** utime + stime of the process (all threads), or of one of its threads (`thread`, e.g. the main one: `pid`), in seconds. */
export function cpuSeconds(pid: number, ticks: number, thread?: number): number {
  const stat = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8');
  // Fields after the command name, which is in parentheses and may contain spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / ticks; // fields 14 and 15 of stat(5)
}
