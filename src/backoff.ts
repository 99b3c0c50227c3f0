/**
 * Exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter"),
 * the one formula for every retry: the gateway client's GET retries and the dispatcher's delivery
 * retries (notify/retry.ts adds Retry-After and the maximum age on top).
 */

/**
 * The delay before the next attempt after `attempts` failed ones (1 = the first attempt failed):
 * uniform in [0, min(maxMs, baseMs * 2^(attempts-1))). `random` is uniform in [0, 1).
 */
export function jitteredBackoff(attempts: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(attempts, 1) - 1, 30);
  return Math.floor(random() * Math.min(maxMs, baseMs * 2 ** exponent));
}
