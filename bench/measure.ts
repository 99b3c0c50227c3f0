/** Measuring helpers of the in-process benchmarks: wall and CPU time of a piece of work (all threads, and the main one), medians and means. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';

export interface Measured<T> {
  result: T;
  wallMs: number;
  /** user + system CPU of this process (all its threads) while the work ran (until `untilMs`, see measure). */
  cpuMs: number;
  /** Of cpuMs, what was spent after the work ended (until `untilMs`): 0 without it. */
  afterMs: number;
  /**
   * Of cpuMs, the main thread's (JavaScript, and what V8 does on it); the rest ran on V8's and
   * libuv's other threads (garbage-collection helpers, the optimizing compiler, file system
   * work). Linux only (/proc), in clock ticks (10 ms at the usual 100 a second): null elsewhere.
   */
  mainCpuMs: number | null;
  /** The window measured (`performance.now()` times: from the start of `fn` to the end of the CPU count); see gcPauseMs. */
  window: { from: number; to: number };
}

/**
 * V8's garbage-collection pauses of the main thread, as Node reports them (`gc` performance
 * entries): kept from the first `measure` on. Node delivers an entry some time after the pause,
 * so a window's pauses are summed only once the run is over (`gcPauseMs`).
 */
const gcPauses: PerformanceEntry[] = [];
let gcObserver: PerformanceObserver | undefined;

/**
 * The main thread's garbage-collection pauses that started within each window (`measure`'s
 * `window`), ms, in order: called after the measured runs, it first waits for Node to deliver the
 * entries of the last pauses.
 */
export async function gcPauseMs(windows: readonly { from: number; to: number }[]): Promise<number[]> {
  await new Promise((resolve) => setTimeout(resolve, 200));
  return windows.map(({ from, to }) => gcPauses.filter((e) => e.startTime >= from && e.startTime <= to).reduce((sum, e) => sum + e.duration, 0));
}

/**
 * Runs `fn` and measures its wall time and the CPU time of this process meanwhile. With `untilMs`
 * (a `performance.now()` time), the CPU counts on until then when `fn` ends earlier: the work `fn`
 * leaves behind (V8's garbage-collection tasks) is counted as its own, not as whatever runs next.
 */
export async function measure<T>(fn: () => Promise<T>, untilMs = 0): Promise<Measured<T>> {
  if (gcObserver === undefined) {
    gcObserver = new PerformanceObserver((list) => void gcPauses.push(...list.getEntries()));
    gcObserver.observe({ entryTypes: ['gc'] });
  }
  const main0 = mainThreadCpuMs();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const result = await fn();
  const wallMs = performance.now() - t0;
  const ended = process.cpuUsage(cpu0);
  if (untilMs > performance.now()) await sleepUntil(untilMs);
  const cpu = process.cpuUsage(cpu0);
  const main1 = mainThreadCpuMs();
  const ms = (usage: NodeJS.CpuUsage): number => (usage.user + usage.system) / 1000;
  const mainCpuMs = main0 === null || main1 === null ? null : main1 - main0;
  return { result, wallMs, cpuMs: ms(cpu), afterMs: ms(cpu) - ms(ended), mainCpuMs, window: { from: t0, to: performance.now() } };
}

/** Clock ticks a second of /proc's CPU times (`getconf CLK_TCK`; 100 if that fails); undefined until first asked. */
let ticksPerSecond: number | undefined;

/**
 * User + system CPU of this process's main thread so far, ms (/proc/self/task/<pid>/stat: the
 * main thread's id is the process's), or null where there is no such file (not Linux).
 */
export function mainThreadCpuMs(): number | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'latin1');
  } catch {
    return null;
  }
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'latin1' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  // The fields after the command name (in parentheses, which may hold spaces): utime and stime are the 14th and 15th of the line.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return Number.isFinite(utime) && Number.isFinite(stime) ? ((utime + stime) * 1000) / ticksPerSecond : null;
}

/** Resolves at `untilMs` (a `performance.now()` time), at once when it has passed. */
export const sleepUntil = (untilMs: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, untilMs - performance.now())));

/** The median (upper median for an even count); NaN for none. */
export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** The arithmetic mean; NaN for none. */
export const mean = (xs: readonly number[]): number => xs.reduce((s, x) => s + x, 0) / xs.length;
