/** Measuring helpers of the in-process benchmarks: wall and CPU time of a piece of work, medians. */

export interface Measured<T> {
  result: T;
  wallMs: number;
  /** user + system CPU of this process (all its threads) while the work ran. */
  cpuMs: number;
}

/** Runs `fn` and measures its wall time and the CPU time of this process meanwhile. */
export async function measure<T>(fn: () => Promise<T>): Promise<Measured<T>> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const result = await fn();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { result, wallMs, cpuMs: (cpu.user + cpu.system) / 1000 };
}

/** The median (upper median for an even count); NaN for none. */
export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
