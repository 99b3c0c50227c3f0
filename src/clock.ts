/**
 * The only place that reads the system time. Services take a Clock; pure functions take `now`.
 * Tests pass a FakeClock (test/helpers/fake-clock.ts) and advance it instead of sleeping.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Resolves after `ms` milliseconds of this clock's time; rejects with the signal's reason if aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The longest delay a Node timer holds (about 24.8 days); a longer one fires after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A delay a Node timer can hold: within [0, MAX_TIMER_MS] (NaN becomes 0). */
export function timerDelay(ms: number): number {
  return ms > 0 ? Math.min(ms, MAX_TIMER_MS) : 0;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason as Error);
        return;
      }
      const until = Date.now() + ms;
      let timer: NodeJS.Timeout | undefined;
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal?.reason as Error);
      };
      // A sleep longer than a timer holds is taken in steps, never as a 1 ms timer.
      const arm = (): void => {
        const left = until - Date.now();
        if (!(left > 0)) {
          signal?.removeEventListener('abort', onAbort);
          resolve();
          return;
        }
        timer = setTimeout(arm, timerDelay(left));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      arm();
    }),
};
