/**
 * The durable outbox as the dispatcher sees it: an interface owned here and implemented by the
 * store (src/store/sqlite/outbox.ts) and, for the dispatcher's unit tests, in memory
 * (test/notify/memory-outbox.ts). test/contract/outbox.contract.ts holds both to the same rules.
 *
 * Rows are claimed before they are sent: `claim` turns due rows into `sending` with a lease, and a
 * claimed row is given to no other claim until its lease ends, so any number of delivery passes
 * for one notifier (the loop and `deliverNow`, or two processes) send a message once. A pass that
 * stops early gives its unsent claims back (`unclaim`); a process that died leaves them to expire.
 *
 * Every method returns `Awaitable<T>` (SQLite answers at once, a network database later); the
 * dispatcher always awaits.
 */
import type { Awaitable } from '../awaitable.js';
import type { Fence } from './leases.js';
import type { NotificationMessage } from './notifications.js';

/** One queued delivery of one message to one notifier. */
export interface OutboxRow {
  id: number;
  notifier: string;
  message: NotificationMessage;
  createdAt: number;
  /** Failed attempts so far. */
  attempts: number;
  nextAttemptAt: number;
}

/** Messages given up for one notifier and not yet reported on the others. */
export interface UnreportedFailures {
  notifier: string;
  /** How many rows. */
  dead: number;
  /** Creation time of the oldest of them. */
  failingSince: number;
  /** The error of the newest of them. */
  lastError: string;
  /** The highest row id among them: `markReported` covers rows up to it. */
  upToId: number;
  /** When a failure of this notifier was last reported, or null. */
  lastReportedAt: number | null;
}

/** Per notifier: rows waiting (pending or being sent), given up, and delivered. */
export interface OutboxStats {
  notifier: string;
  pending: number;
  dead: number;
  delivered: number;
}

export interface OutboxRepository {
  /** Queues a new message, due now. */
  enqueue(notifier: string, message: NotificationMessage, now: number): Awaitable<void>;
  /**
   * Claims up to `limit` rows of `notifier` that are due (pending with nextAttemptAt <= now, or
   * sending with an expired lease), oldest (lowest id) first: they are `sending` until
   * `now + leaseMs`. Damaged rows are marked dead instead of returned. With a `fence` (replicas),
   * only rows of the fence's account, and only while the fence still holds that account's lease,
   * checked in the claim's own transaction (LeaseLostError otherwise, nothing claimed).
   */
  claim(notifier: string, now: number, limit: number, leaseMs: number, fence?: Fence): Awaitable<OutboxRow[]>;
  /** Gives claimed rows that were not attempted back (pending, due as before). */
  unclaim(ids: readonly number[]): Awaitable<void>;
  markDelivered(id: number, now: number): Awaitable<void>;
  /** attempts += 1, remember the error, pending again from `nextAttemptAt`. */
  markFailed(id: number, now: number, error: string, nextAttemptAt: number): Awaitable<void>;
  /**
   * attempts += 1, remember the error, never try again. With `report` (the default) the row
   * counts among the failures reported on the other notifiers (`unreportedFailures`).
   */
  markDead(id: number, now: number, error: string, options?: { report?: boolean }): Awaitable<void>;
  /** Earliest time a row of `notifier` becomes claimable (next attempt or lease end), or null. */
  nextDue(notifier: string): Awaitable<number | null>;
  /** Dead rows not yet reported, per notifier. */
  unreportedFailures(): Awaitable<UnreportedFailures[]>;
  /**
   * Atomically: marks the dead rows of each `reported` notifier up to its `upToId` as reported at
   * `now` and queues `notices` (of `account`, default "default"), unless none of those rows was
   * still unreported: then another process (a replica that read the same failures) reported them
   * first, and nothing is queued, so a failure is announced once. True when the notices were queued.
   */
  report(reported: readonly { notifier: string; upToId: number }[], notices: readonly { notifier: string; message: NotificationMessage }[], now: number, account?: string): Awaitable<boolean>;
  /**
   * The notifiers were removed from the configuration: every row of a notifier not in `keep` that
   * is still waiting becomes dead with `reason`, to be reported once on the remaining notifiers.
   * Returns the rows marked. (Items still grouping for a removed notifier are released into the
   * outbox at once by the grouper, then retired here.)
   */
  retire(keep: readonly string[], now: number, reason: (notifier: string) => string): Awaitable<number>;
  stats(): Awaitable<OutboxStats[]>;
}

/** The shape check of a stored message read back (a damaged row fails it and is set aside). */
export function looksLikeNotificationMessage(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.kind === 'string' && Array.isArray(v.items);
}
