import type { Clock } from '../../src/clock.js';
import { until } from './wait.js';

/** A clock that moves only when told to. Sleepers wake when `advance` passes their deadline. */
export class FakeClock implements Clock {
  private current: number;
  private sleepers: { until: number; resolve: () => void }[] = [];

  constructor(start: number | string = '2026-01-01T00:00:00Z') {
    this.current = typeof start === 'number' ? start : Date.parse(start);
  }

  now(): number {
    return this.current;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason as Error);
      const onAbort = (): void => {
        this.sleepers = this.sleepers.filter((s) => s !== sleeper);
        reject(signal?.reason as Error);
      };
      // A sleep that ends takes its abort listener with it (a loop sleeping on one signal would pile them up).
      const sleeper = {
        until: this.current + ms,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      this.sleepers.push(sleeper);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** How many sleeps wait on this clock now: a loop that has reached its wait shows here (instead of a test guessing how long it takes). */
  get sleeping(): number {
    return this.sleepers.length;
  }

  /** Moves time forward and wakes every sleeper whose deadline has passed. */
  advance(ms: number): void {
    this.current += ms;
    const due = this.sleepers.filter((s) => s.until <= this.current);
    this.sleepers = this.sleepers.filter((s) => s.until > this.current);
    for (const s of due) s.resolve();
  }

  /**
   * Advances and waits until every loop it woke is waiting on the clock again (as many sleeps as
   * before): what a test wants between steps of a world that runs on this clock.
   */
  async advanceAndSettle(ms: number): Promise<void> {
    const before = this.sleeping;
    this.advance(ms);
    await until(`the loops woken at ${new Date(this.current).toISOString()} to wait again`, () => this.sleeping >= before);
  }

  set(time: number | string): void {
    const t = typeof time === 'number' ? time : Date.parse(time);
    this.advance(t - this.current);
  }
}
