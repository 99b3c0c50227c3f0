/**
 * Waiting for a condition instead of sleeping: the one poll loop of the tests, for conditions that
 * live in another process, a database or a socket and send no event a test could await.
 */
import { vi } from 'vitest';
import type { Endpoint } from '../../src/gateway/types.js';
import type { Simulator } from '../../src/sim/simulator.js';

export interface UntilOptions {
  /** Fail after this long (default 10 s: generous for a loaded machine; a condition that holds sooner ends the wait sooner). */
  timeoutMs?: number;
  /** How often the condition is checked (default 20 ms). */
  everyMs?: number;
  /** More to say when it times out (a daemon's output, the state seen last). */
  detail?: () => string | Promise<string>;
}

/** Resolves with the condition's first truthy value; rejects after `timeoutMs` naming `what`. */
export async function until<T>(what: string, condition: () => T | Promise<T>, options: UntilOptions = {}): Promise<NonNullable<T>> {
  const { timeoutMs = 10_000, everyMs = 20 } = options;
  try {
    return await vi.waitFor(
      async () => {
        const value = await condition();
        if (!value) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
        return value as NonNullable<T>;
      },
      { timeout: timeoutMs, interval: everyMs },
    );
  } catch (err) {
    const detail = options.detail ? `\n${await options.detail()}` : '';
    throw new Error(`${(err as Error).message}${detail}`, { cause: err });
  }
}

/**
 * Resolves when the simulator receives its next request to `endpoint` (the request then goes on
 * as usual): "the cycle is under way and has reached the gateway", without guessing how long that takes.
 */
export function requestArrives(sim: Pick<Simulator, 'faultFor'>, endpoint: Endpoint): Promise<void> {
  const original = sim.faultFor.bind(sim);
  return new Promise((resolve) => {
    sim.faultFor = (e, now) => {
      if (e === endpoint) {
        sim.faultFor = original;
        resolve();
      }
      return original(e, now);
    };
  });
}
