import { describe, expect, it } from 'vitest';
import { backoffDelay, decideAfterFailure, isDead, nextAttemptAt } from '../../src/notify/retry.js';

const policy = { baseMs: 1_000, maxMs: 60_000, maxAgeMs: 3_600_000 };
const top = { ...policy, random: () => 0.999999 };
const bottom = { ...policy, random: () => 0 };

describe('backoff with full jitter', () => {
  it('the upper bound doubles per attempt up to maxMs', () => {
    const bounds = [1, 2, 3, 4, 5, 6, 7, 8, 20, 1000].map((a) => Math.ceil(backoffDelay(a, top) / 1000) * 1000);
    expect(bounds).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000, 60_000]);
  });

  it('jitter spreads delays over [0, bound)', () => {
    expect(backoffDelay(4, bottom)).toBe(0);
    expect(backoffDelay(4, { ...policy, random: () => 0.5 })).toBe(4_000);
    const seen = new Set(Array.from({ length: 50 }, () => backoffDelay(6, policy)));
    for (const d of seen) {
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThan(32_000);
    }
    expect(seen.size).toBeGreaterThan(10);
  });

  it('never earlier than a Retry-After, which is itself capped by maxMs', () => {
    expect(backoffDelay(1, bottom, 30_000)).toBe(30_000);
    expect(backoffDelay(1, bottom, 10 * 60_000)).toBe(60_000);
    expect(nextAttemptAt(1, 5_000, bottom, 2_500)).toBe(7_500);
  });
});

describe('isDead and decideAfterFailure', () => {
  it('a message is dead once it is maxAge old', () => {
    expect(isDead(0, 3_599_999, 3_600_000)).toBe(false);
    expect(isDead(0, 3_600_000, 3_600_000)).toBe(true);
  });

  it.each([
    { name: 'transient, young: retry', retryable: true, age: 10_000, expected: 'retry' },
    { name: 'transient, too old: dead', retryable: true, age: 3_600_000, expected: 'dead:max_age' },
    { name: 'permanent: dead at once', retryable: false, age: 0, expected: 'dead:permanent' },
  ])('$name', ({ retryable, age, expected }) => {
    const d = decideAfterFailure({ createdAt: 0, attempts: 2 }, { retryable }, age, { ...policy, random: () => 0.5 });
    expect(d.action === 'retry' ? 'retry' : `dead:${d.reason}`).toBe(expected);
    // attempts 2 -> third failure -> bound 4 s, half of it with random 0.5
    if (d.action === 'retry') expect(d.at).toBe(age + 2_000);
  });
});
