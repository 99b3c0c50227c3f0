/**
 * The durable outbox in PostgreSQL (table `outbox`, migrations/postgres/0001_alerts.sql),
 * implementing the dispatcher's OutboxRepository (src/domain/outbox.ts) with the same row life as
 * the SQLite one: pending -> sending (claimed until lease_until) -> delivered | pending again
 * (failed) | dead.
 *
 * A claim selects due rows `FOR UPDATE SKIP LOCKED` and marks them `sending` in the same
 * transaction, so any number of delivery passes, in any number of processes sharing the database,
 * claim a row once while its lease runs. Messages are JSON of the caller's type `M`, checked by
 * `looksRight` when read back; a damaged row is marked dead instead of returned.
 */
import { DEFAULT_ACCOUNT } from '../../box-id.js';
import type { Fence } from '../../domain/leases.js';
import type { DamagedRows } from '../damaged-rows.js';
import {
  looksLikeMessage,
  mergeOutboxCounts,
  toLogEntry,
  toOutboxRow,
  type OutboxCounts,
  type OutboxDbRow,
  type OutboxLogDbRow,
  type OutboxLogEntry,
  type StoredOutboxRow,
} from '../repository-rows.js';
import type { PostgresDatabase, Transaction } from './database.js';
import { checkFence } from './leases.js';

interface UnreportedDbRow {
  notifier: string;
  dead: number;
  failing_since: number;
  up_to_id: number;
  last_error: string | null;
  last_reported_at: number | null;
}

const INSERT = 'INSERT INTO outbox (notifier, created_at, message, next_attempt_at, account) VALUES ($1, $2, $3, $2, $4)';
const DEAD = "UPDATE outbox SET status = 'dead', lease_until = NULL, attempts = attempts + 1, last_error = $2, done_at = $3, reported_at = $4 WHERE id = $1";

/** Inserts a message of `account` due now (shared with the group queue, which releases batches into the outbox). */
export async function insertMessage(tx: Transaction, notifier: string, message: unknown, now: number, account: string = DEFAULT_ACCOUNT): Promise<void> {
  await tx.query(INSERT, [notifier, now, JSON.stringify(message), account]);
}

export class PostgresOutbox<M> {
  constructor(
    private readonly db: PostgresDatabase,
    private readonly damaged: DamagedRows,
    private readonly looksRight: (value: unknown) => boolean = looksLikeMessage,
  ) {}

  async enqueue(notifier: string, message: M, now: number): Promise<void> {
    await insertMessage(this.db, notifier, message, now);
  }

  /**
   * With a `fence`, only rows of the fence's account are claimed, and only while the fence still
   * holds the account's lease (checked FOR SHARE in the claim's transaction; LeaseLostError otherwise).
   */
  async claim(notifier: string, now: number, limit: number, leaseMs: number, fence?: Fence): Promise<StoredOutboxRow<M>[]> {
    return this.db.transaction(async (tx) => {
      if (fence !== undefined) await checkFence(tx, fence);
      const due = await tx.query<OutboxDbRow>(
        'SELECT id, notifier, created_at, message, attempts, next_attempt_at FROM outbox WHERE notifier = $1 AND ' +
          "((status = 'pending' AND next_attempt_at <= $2) OR (status = 'sending' AND lease_until <= $2)) " +
          `${fence === undefined ? '' : 'AND account = $4 '}ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED`,
        fence === undefined ? [notifier, now, limit] : [notifier, now, limit, fence.account],
      );
      const rows: StoredOutboxRow<M>[] = [];
      for (const r of due) {
        const message = this.damaged.read<M>('outbox', r.id, r.message, this.looksRight);
        // A damaged row must not block its notifier for ever: set aside, visibly (not reported as a failing notifier).
        if (message === undefined) await tx.query(DEAD, [r.id, 'unreadable outbox row (damaged JSON)', now, now]);
        else rows.push(toOutboxRow(r, message));
      }
      if (rows.length > 0) await tx.query("UPDATE outbox SET status = 'sending', lease_until = $2 WHERE id = ANY($1)", [rows.map((r) => r.id), now + leaseMs]);
      return rows;
    });
  }

  async unclaim(ids: readonly number[]): Promise<void> {
    await this.db.query("UPDATE outbox SET status = 'pending', lease_until = NULL WHERE id = ANY($1) AND status = 'sending'", [[...ids]]);
  }

  async markDelivered(id: number, now: number): Promise<void> {
    await this.db.query("UPDATE outbox SET status = 'delivered', lease_until = NULL, done_at = $2 WHERE id = $1", [id, now]);
  }

  async markFailed(id: number, _now: number, error: string, nextAttemptAt: number): Promise<void> {
    await this.db.query("UPDATE outbox SET status = 'pending', lease_until = NULL, attempts = attempts + 1, last_error = $2, next_attempt_at = $3 WHERE id = $1", [id, error, nextAttemptAt]);
  }

  async markDead(id: number, now: number, error: string, options: { report?: boolean } = {}): Promise<void> {
    await this.db.query(DEAD, [id, error, now, options.report === false ? now : null]);
  }

  async nextDue(notifier: string): Promise<number | null> {
    const [row] = await this.db.query<{ due: number | null }>(
      "SELECT min(CASE status WHEN 'pending' THEN next_attempt_at ELSE lease_until END) AS due FROM outbox WHERE notifier = $1 AND status IN ('pending', 'sending')",
      [notifier],
    );
    return row?.due ?? null;
  }

  async unreportedFailures(): Promise<{ notifier: string; dead: number; failingSince: number; lastError: string; upToId: number; lastReportedAt: number | null }[]> {
    const rows = await this.db.query<UnreportedDbRow>(
      'SELECT u.notifier, u.dead, u.failing_since, u.up_to_id, ' +
        "(SELECT last_error FROM outbox o WHERE o.notifier = u.notifier AND o.status = 'dead' AND o.reported_at IS NULL ORDER BY o.id DESC LIMIT 1) AS last_error, " +
        '(SELECT max(reported_at) FROM outbox o WHERE o.notifier = u.notifier) AS last_reported_at ' +
        "FROM (SELECT notifier, count(*) AS dead, min(created_at) AS failing_since, max(id) AS up_to_id FROM outbox WHERE status = 'dead' AND reported_at IS NULL GROUP BY notifier) u " +
        'ORDER BY u.notifier COLLATE "C"',
    );
    return rows.map((r) => ({ notifier: r.notifier, dead: r.dead, failingSince: r.failing_since, lastError: r.last_error ?? '', upToId: r.up_to_id, lastReportedAt: r.last_reported_at ?? null }));
  }

  async report(reported: readonly { notifier: string; upToId: number }[], notices: readonly { notifier: string; message: M }[], now: number, account?: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      // Marked first: a replica reporting the same rows at the same time waits for these row locks,
      // then finds them reported and queues nothing.
      let marked = 0;
      for (const r of reported) {
        const rows = await tx.query("UPDATE outbox SET reported_at = $1 WHERE notifier = $2 AND status = 'dead' AND reported_at IS NULL AND id <= $3 RETURNING id", [now, r.notifier, r.upToId]);
        marked += rows.length;
      }
      if (marked === 0) return false; // reported by another process meanwhile
      for (const n of notices) await insertMessage(tx, n.notifier, n.message, now, account);
      return true;
    });
  }

  async retire(keep: readonly string[], now: number, reason: (notifier: string) => string): Promise<number> {
    return this.db.transaction(async (tx) => {
      const waiting = await tx.query<{ notifier: string }>("SELECT DISTINCT notifier FROM outbox WHERE status IN ('pending', 'sending') AND NOT (notifier = ANY($1))", [[...keep]]);
      let marked = 0;
      for (const { notifier } of waiting) {
        const rows = await tx.query<{ id: number }>(
          "UPDATE outbox SET status = 'dead', lease_until = NULL, last_error = $1, done_at = $2, reported_at = NULL WHERE notifier = $3 AND status IN ('pending', 'sending') RETURNING id",
          [reason(notifier), now, notifier],
        );
        marked += rows.length;
      }
      return marked;
    });
  }

  /** The newest messages created since `since` (at most `limit`), newest first, with their items (`items` of `M`). */
  async log<I>(since: number, limit: number, itemsOf: (message: M) => I[]): Promise<OutboxLogEntry<I>[]> {
    const rows = await this.db.query<OutboxLogDbRow>('SELECT * FROM outbox WHERE created_at >= $1 ORDER BY id DESC LIMIT $2', [since, limit]);
    return rows.map((r) => toLogEntry(r, this.damaged.read<M>('outbox', r.id, r.message, this.looksRight), itemsOf));
  }

  /** Per notifier: messages waiting (pending or being sent, plus items still grouping), dead and delivered. */
  async stats(): Promise<OutboxCounts[]> {
    const outbox = await this.db.query<OutboxCounts>(
      "SELECT notifier, count(*) FILTER (WHERE status IN ('pending', 'sending')) AS pending, count(*) FILTER (WHERE status = 'dead') AS dead, " +
        "count(*) FILTER (WHERE status = 'delivered') AS delivered FROM outbox GROUP BY notifier",
    );
    const queued = await this.db.query<{ notifier: string; n: number }>('SELECT notifier, count(*) AS n FROM notification_queue GROUP BY notifier');
    return mergeOutboxCounts(outbox, queued);
  }
}
