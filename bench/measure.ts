/** Measuring helpers of the in-process benchmarks: wall and CPU time of a piece of work, medians and means. */

export interface Measured<T> {
  result: T;
  wallMs: number;
  /** user + system CPU of this process (all its threads) while the work ran (until `untilMs`, see measure). */
  cpuMs: number;
  /** Of cpuMs, what was spent after the work ended (until `untilMs`): 0 without it. */
  afterMs: number;
}

/**
 * Runs `fn` and measures its wall time and the CPU time of this process meanwhile. With `untilMs`
 * (a `performance.now()` time), the CPU counts on until then when `fn` ends earlier: the work `fn`
 * leaves behind (V8's garbage-collection tasks) is counted as its own, not as whatever runs next.
 */
export async function measure<T>(fn: () => Promise<T>, untilMs = 0): Promise<Measured<T>> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const result = await fn();
  const wallMs = performance.now() - t0;
  const ended = process.cpuUsage(cpu0);
  if (untilMs > performance.now()) await sleepUntil(untilMs);
  const cpu = process.cpuUsage(cpu0);
  const ms = (usage: NodeJS.CpuUsage): number => (usage.user + usage.system) / 1000;
  return { result, wallMs, cpuMs: ms(cpu), afterMs: ms(cpu) - ms(ended) };
}

/** Resolves at `untilMs` (a `performance.now()` time), at once when it has passed. */
export const sleepUntil = (untilMs: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, untilMs - performance.now())));

/** The median (upper median for an even count); NaN for none. */
export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** The arithmetic mean; NaN for none. */
export const mean = (xs: readonly number[]): number => xs.reduce((s, x) => s + x, 0) / xs.length;
