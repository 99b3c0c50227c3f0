/**
 * Contract-test rig for the HTTP channels: a real local receiver, a notifier, and the real
 * Dispatcher over an in-memory outbox on a fake clock, so that a 429 or 5xx is answered with the
 * dispatcher's backoff (Retry-After honoured) and a later attempt, exactly as in the daemon.
 */
import { expect } from 'vitest';
import { Dispatcher } from '../../src/notify/dispatcher.js';
import type { NotificationMessage, Notifier } from '../../src/domain/notifications.js';
import { FakeClock } from '../helpers/fake-clock.js';
import type { HttpReceiver } from '../helpers/http-receiver.js';
import { T0 } from './fixtures.js';
import { MemoryOutbox } from './memory-outbox.js';

export const RIG_POLICY = { baseMs: 10_000, maxMs: 60_000, maxAgeMs: 600_000, random: () => 0.5 };

export interface ChannelRig {
  clock: FakeClock;
  outbox: MemoryOutbox;
  dispatcher: Dispatcher;
  /** Queues the message and runs one delivery pass. */
  deliver(message: NotificationMessage): Promise<void>;
  /** Advances the clock to the notifier's next attempt and runs a pass. */
  retry(): Promise<void>;
}

export function channelRig(notifier: Notifier, clock = new FakeClock(T0)): ChannelRig {
  const outbox = new MemoryOutbox();
  const dispatcher = new Dispatcher({ notifiers: [notifier], queue: outbox, clock, policy: RIG_POLICY });
  return {
    clock,
    outbox,
    dispatcher,
    async deliver(message) {
      outbox.enqueue(notifier.name, message, clock.now());
      await dispatcher.runOnce(notifier.name);
    },
    async retry() {
      const at = dispatcher.pausedUntilOf(notifier.name);
      if (at === undefined) throw new Error('the notifier is not waiting for a retry');
      clock.set(at);
      await dispatcher.runOnce(notifier.name);
    },
  };
}

/**
 * The receiver answers the first request 429 with Retry-After: 30; the rig must wait at least 30 s
 * (more than the 5 s its jittered backoff would pick) and then deliver.
 */
export async function deliverThrough429(rig: ChannelRig, receiver: HttpReceiver, message: NotificationMessage, notifier: string): Promise<void> {
  receiver.respondWith({ status: 429, body: '{"error":"slow down"}', headers: { 'retry-after': '30' } }, 1);
  const start = rig.clock.now();
  await rig.deliver(message);
  const [row] = rig.outbox.of(notifier);
  expect(row).toMatchObject({ state: 'pending', attempts: 1 });
  expect(row?.lastError).toMatch(/answered HTTP 429/);
  expect(row?.nextAttemptAt).toBeGreaterThanOrEqual(start + 30_000);
  await rig.retry();
  expect(rig.outbox.of(notifier)[0]?.state).toBe('delivered');
}
