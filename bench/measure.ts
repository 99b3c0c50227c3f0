/** Measuring helpers of the in-process benchmarks: wall and CPU time of a piece of work, medians and means. */
import { PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';

export interface Measured<T> {
  result: T;
  wallMs: number;
  /** user + system CPU of this process (all its threads) while the work ran (until `untilMs`, see measure). */
  cpuMs: number;
  /** Of cpuMs, what was spent after the work ended (until `untilMs`): 0 without it. */
  afterMs: number;
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
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const result = await fn();
  const wallMs = performance.now() - t0;
  const ended = process.cpuUsage(cpu0);
  if (untilMs > performance.now()) await sleepUntil(untilMs);
  const cpu = process.cpuUsage(cpu0);
  const ms = (usage: NodeJS.CpuUsage): number => (usage.user + usage.system) / 1000;
  return { result, wallMs, cpuMs: ms(cpu), afterMs: ms(cpu) - ms(ended), window: { from: t0, to: performance.now() } };
}

/** Resolves at `untilMs` (a `performance.now()` time), at once when it has passed. */
export const sleepUntil = (untilMs: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, untilMs - performance.now())));

/** The median (upper median for an even count); NaN for none. */
export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** The arithmetic mean; NaN for none. */
export const mean = (xs: readonly number[]): number => xs.reduce((s, x) => s + x, 0) / xs.length;
