/**
 * The archive's bandwidth bound: one token bucket shared by every download in flight, on the
 * daemon's clock. Up to one second's worth of bytes may pass at once; beyond that, `take` waits
 * until the bytes fit the rate.
 */
import type { Clock } from '../clock.js';

export class Throttle {
  /** When the bytes taken so far will have been paid for at the rate (clock ms). */
  private paidUntil = Number.NEGATIVE_INFINITY;

  /** `bytesPerSecond` undefined: no bound. */
  constructor(
    private readonly bytesPerSecond: number | undefined,
    private readonly clock: Clock,
  ) {}

  /** Accounts for `bytes` and waits while they run ahead of the rate by more than one second. */
  async take(bytes: number, signal?: AbortSignal): Promise<void> {
    if (this.bytesPerSecond === undefined) return;
    const now = this.clock.now();
    this.paidUntil = Math.max(this.paidUntil, now - 1000) + (bytes * 1000) / this.bytesPerSecond;
    const wait = this.paidUntil - now;
    if (wait > 0) await this.clock.sleep(Math.ceil(wait), signal);
  }
}
