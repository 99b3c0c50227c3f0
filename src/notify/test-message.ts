/**
 * What `boxwatch notify-test` does: send one test message through each notifier (or one named
 * notifier) directly, without the outbox or retries, and report success or the exact failure.
 */
import { errorMessage } from '../errors.js';
import { NotifyError } from './errors.js';
import type { NotificationMessage, Notifier } from '../domain/notifications.js';

export interface TestResult {
  notifier: string;
  type: Notifier['type'];
  ok: boolean;
  /** The failure (a NotifyError message: no secrets). */
  error?: string;
  /** Whether the failure looks temporary (server down) rather than a wrong setting. */
  retryable?: boolean;
}

/** A test message as all channels render it. */
export function testMessage(now: number, source?: string): NotificationMessage {
  return { kind: 'test', items: [], createdAt: now, ...(source ? { source } : {}) };
}

/**
 * Sends a test message through every notifier, or only through `only` (by name), concurrently.
 * Returns one result per notifier tried; an unknown `only` returns an empty list.
 */
export async function sendTestMessages(
  notifiers: readonly Notifier[],
  options: { now: number; only?: string; source?: string; signal?: AbortSignal },
): Promise<TestResult[]> {
  const chosen = options.only === undefined ? notifiers : notifiers.filter((n) => n.name === options.only);
  const message = testMessage(options.now, options.source);
  return Promise.all(
    chosen.map(async (n): Promise<TestResult> => {
      try {
        await n.send(message, options.signal);
        return { notifier: n.name, type: n.type, ok: true };
      } catch (err) {
        return err instanceof NotifyError
          ? { notifier: n.name, type: n.type, ok: false, error: err.message, retryable: err.retryable }
          : { notifier: n.name, type: n.type, ok: false, error: errorMessage(err), retryable: true };
      }
    }),
  );
}
