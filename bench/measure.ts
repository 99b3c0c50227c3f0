/** Measuring helpers of the in-process benchmarks: wall and CPU time of a piece of work, medians and means. */
import { PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';

export interface Measured<T> {
  result: T;
  wallMs: number;
  /** user + system CPU of this process (all its threads) while the work ran (until `untilMs`, see measure). */
  cpuMs: number;
  /** Of cpuMs, what was spent after the work ended (until `untilMs`): 0 without it. */
  afterMs: number;
  /** The main thread's garbage-collection pauses within the window (V8's `gc` performance entries), ms. */
  gcPauseMs: number;
}

/**
 * V8's garbage-collection pauses of the main thread, as Node reports them (`gc` performance
 * entries, delivered a little after they happen): kept from the first `measure` on.
 */
const gcPauses: PerformanceEntry[] = [];
let gcObserver: PerformanceObserver | undefined;

/** The pauses that started within [from, to] (`performance.now()` times), ms; the list is emptied of older ones. */
async function gcPauseMsBetween(from: number, to: number): Promise<number> {
  // The entries of pauses up to now are queued for the observer: let it take them first.
  await new Promise((resolve) => setImmediate(resolve));
  let ms = 0;
  for (const e of gcPauses) if (e.startTime >= from && e.startTime <= to) ms += e.duration;
  gcPauses.splice(0, gcPauses.length, ...gcPauses.filter((e) => e.startTime > to));
  return ms;
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
  const windowEnd = performance.now();
  const ms = (usage: NodeJS.CpuUsage): number => (usage.user + usage.system) / 1000;
  return { result, wallMs, cpuMs: ms(cpu), afterMs: ms(cpu) - ms(ended), gcPauseMs: await gcPauseMsBetween(t0, windowEnd) };
}

/** Resolves at `untilMs` (a `performance.now()` time), at once when it has passed. */
export const sleepUntil = (untilMs: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, untilMs - performance.now())));

/** The median (upper median for an even count); NaN for none. */
export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** The arithmetic mean; NaN for none. */
export const mean = (xs: readonly number[]): number => xs.reduce((s, x) => s + x, 0) / xs.length;
