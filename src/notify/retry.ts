/**
 * The dispatcher's retry policy, as pure functions of (attempts, now): exponential backoff with
 * full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter"), a floor from a server's
 * Retry-After, and a maximum age after which a message is given up (dead).
 */
import { jitteredBackoff } from '../backoff.js';

export interface RetryPolicy {
  /** Cap of the first retry delay (default 5 s). */
  baseMs: number;
  /** Cap of any retry delay (default 5 min). */
  maxMs: number;
  /** A message older than this when an attempt fails is given up (default 1 h). */
  maxAgeMs: number;
  /** Uniform in [0, 1); injectable for tests. */
  random?: () => number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { baseMs: 5_000, maxMs: 300_000, maxAgeMs: 3_600_000 };

/**
 * The delay before the next attempt after `attempts` failed ones (1 = the first attempt failed):
 * uniform in [0, min(maxMs, baseMs * 2^(attempts-1))), never below `retryAfterMs`.
 */
export function backoffDelay(attempts: number, policy: Pick<RetryPolicy, 'baseMs' | 'maxMs' | 'random'>, retryAfterMs = 0): number {
  const jittered = jitteredBackoff(attempts, policy.baseMs, policy.maxMs, policy.random);
  return Math.max(jittered, Math.min(retryAfterMs, policy.maxMs));
}

/** When to try again after `attempts` failed attempts, the last at `now`. */
export function nextAttemptAt(
  attempts: number,
  now: number,
  policy: Pick<RetryPolicy, 'baseMs' | 'maxMs' | 'random'>,
  retryAfterMs = 0,
): number {
  return now + backoffDelay(attempts, policy, retryAfterMs);
}

/** Whether a message created at `createdAt` is too old to try again at `now`. */
export function isDead(createdAt: number, now: number, maxAgeMs: number): boolean {
  return now - createdAt >= maxAgeMs;
}

/** What to do with a message whose attempt just failed. */
export type FailureDecision = { action: 'retry'; at: number } | { action: 'dead'; reason: 'permanent' | 'max_age' };

/**
 * The outcome of a failed attempt: a permanent error (not retryable) or a message past its maximum
 * age is dead; anything else is retried at `nextAttemptAt`. A message is always attempted at least
 * once, however old, so a restart after a long outage still delivers what was queued.
 */
export function decideAfterFailure(
  row: { createdAt: number; attempts: number },
  error: { retryable: boolean; retryAfterMs?: number | undefined },
  now: number,
  policy: RetryPolicy,
): FailureDecision {
  if (!error.retryable) return { action: 'dead', reason: 'permanent' };
  if (isDead(row.createdAt, now, policy.maxAgeMs)) return { action: 'dead', reason: 'max_age' };
  return { action: 'retry', at: nextAttemptAt(row.attempts + 1, now, policy, error.retryAfterMs ?? 0) };
}
