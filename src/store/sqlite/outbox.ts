/**
 * The durable outbox in `outbox` (migrations 0002 and 0003), implementing the dispatcher's
 * OutboxRepository (src/domain/outbox.ts) without knowing the message type: messages are JSON of
 * the caller's type `M`, checked by the caller's `looksRight` when read back.
 *
 * Row life: pending -> sending (claimed, until lease_until) -> delivered | pending again (failed,
 * with next_attempt_at) | dead. Dead rows carry reported_at once a delivery-failure notice named
 * them (or at once when they are not to be reported). Every read-then-write runs in an IMMEDIATE
 * transaction, so it never meets SQLITE_BUSY_SNAPSHOT next to another writer. Rows belong to an
 * account (the group queue releases them with their items' account); a fenced claim (replicas,
 * src/domain/leases.ts) takes only its account's rows, and only while its lease holds.
 */
import type Database from 'better-sqlite3';
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
import { checkFence } from './leases.js';

/** Prepares the outbox statements (shared with the group queue, which inserts messages). */
export function outboxStatements(db: Database.Database) {
  return {
    insert: db.prepare('INSERT INTO outbox (notifier, created_at, message, next_attempt_at) VALUES (?, ?, ?, ?)'),
    insertOf: db.prepare('INSERT INTO outbox (notifier, created_at, message, next_attempt_at, account) VALUES (?, ?, ?, ?, ?)'),
    // `status IN ('pending', 'sending')` lets SQLite read only the waiting rows through the
    // indexes (outbox_pending; outbox_account, which holds only those): without it a claim, asked
    // every few seconds by an idle dispatcher, read every delivered row kept for the retention.
    claimable: db.prepare(
      "SELECT id, notifier, created_at, message, attempts, next_attempt_at FROM outbox WHERE notifier = ? AND status IN ('pending', 'sending') AND " +
        "((status = 'pending' AND next_attempt_at <= ?) OR (status = 'sending' AND lease_until <= ?)) ORDER BY id LIMIT ?",
    ),
    claimableOf: db.prepare(
      "SELECT id, notifier, created_at, message, attempts, next_attempt_at FROM outbox WHERE account = ? AND notifier = ? AND status IN ('pending', 'sending') AND " +
        "((status = 'pending' AND next_attempt_at <= ?) OR (status = 'sending' AND lease_until <= ?)) ORDER BY id LIMIT ?",
    ),
    take: db.prepare("UPDATE outbox SET status = 'sending', lease_until = ? WHERE id = ?"),
    untake: db.prepare("UPDATE outbox SET status = 'pending', lease_until = NULL WHERE id = ? AND status = 'sending'"),
    untakeAll: db.prepare("UPDATE outbox SET status = 'pending', lease_until = NULL WHERE status = 'sending'"),
    nextDue: db.prepare(
      "SELECT MIN(CASE status WHEN 'pending' THEN next_attempt_at ELSE lease_until END) FROM outbox WHERE notifier = ? AND status IN ('pending', 'sending')",
    ).pluck(),
    delivered: db.prepare("UPDATE outbox SET status = 'delivered', lease_until = NULL, done_at = ? WHERE id = ?"),
    failed: db.prepare("UPDATE outbox SET status = 'pending', lease_until = NULL, attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE id = ?"),
    dead: db.prepare("UPDATE outbox SET status = 'dead', lease_until = NULL, attempts = attempts + 1, last_error = ?, done_at = ?, reported_at = ? WHERE id = ?"),
    unreported: db.prepare(
      "SELECT notifier, COUNT(*) AS dead, MIN(created_at) AS failing_since, MAX(id) AS up_to_id FROM outbox WHERE status = 'dead' AND reported_at IS NULL GROUP BY notifier ORDER BY notifier",
    ),
    lastError: db.prepare("SELECT last_error FROM outbox WHERE notifier = ? AND status = 'dead' AND reported_at IS NULL ORDER BY id DESC LIMIT 1").pluck(),
    lastReported: db.prepare('SELECT MAX(reported_at) FROM outbox WHERE notifier = ?').pluck(),
    markReported: db.prepare("UPDATE outbox SET reported_at = ? WHERE notifier = ? AND status = 'dead' AND reported_at IS NULL AND id <= ?"),
    notifiersWaiting: db.prepare("SELECT DISTINCT notifier FROM outbox WHERE status IN ('pending', 'sending')").pluck(),
    retire: db.prepare("UPDATE outbox SET status = 'dead', lease_until = NULL, last_error = ?, done_at = ?, reported_at = NULL WHERE notifier = ? AND status IN ('pending', 'sending')"),
    stats: db.prepare(
      "SELECT notifier, SUM(status IN ('pending', 'sending')) AS pending, SUM(status = 'dead') AS dead, SUM(status = 'delivered') AS delivered FROM outbox GROUP BY notifier",
    ),
    since: db.prepare('SELECT * FROM outbox WHERE created_at >= ? ORDER BY id DESC LIMIT ?'),
    queuedCount: db.prepare('SELECT notifier, COUNT(*) AS n FROM notification_queue GROUP BY notifier'),
  };
}

export class SqliteOutbox<M> {
  private readonly s;

  constructor(
    private readonly db: Database.Database,
    private readonly damaged: DamagedRows,
    private readonly looksRight: (value: unknown) => boolean = looksLikeMessage,
  ) {
    this.s = outboxStatements(db);
  }

  enqueue(notifier: string, message: M, now: number): void {
    this.s.insert.run(notifier, now, JSON.stringify(message), now);
  }

  /**
   * With a `fence`, only rows of the fence's account are claimed, and only while the fence still
   * holds the account's lease (checked in the claim's transaction; LeaseLostError otherwise).
   */
  claim(notifier: string, now: number, limit: number, leaseMs: number, fence?: Fence): StoredOutboxRow<M>[] {
    const due = (n: number): OutboxDbRow[] =>
      (fence === undefined ? this.s.claimable.all(notifier, now, now, n) : this.s.claimableOf.all(fence.account, notifier, now, now, n)) as OutboxDbRow[];
    // Nothing due (the common case): answered by a read, without taking the write lock.
    if (due(1).length === 0) return [];
    return this.db
      .transaction(() => {
        if (fence !== undefined) checkFence(this.db, fence);
        const rows: StoredOutboxRow<M>[] = [];
        for (const r of due(limit)) {
          const message = this.damaged.read<M>('outbox', r.id, r.message, this.looksRight);
          if (message === undefined) {
            // A damaged row must not block its notifier for ever: set aside, visibly.
            this.s.dead.run('unreadable outbox row (damaged JSON)', now, now, r.id);
            continue;
          }
          this.s.take.run(now + leaseMs, r.id);
          rows.push(toOutboxRow(r, message));
        }
        return rows;
      })
      .immediate();
  }

  unclaim(ids: readonly number[]): void {
    this.db.transaction(() => {
      for (const id of ids) this.s.untake.run(id);
    })();
  }

  /** Every claim becomes void (a daemon starts: no other process delivers; see SqliteStore.lockForDaemon). */
  unclaimAll(): void {
    this.s.untakeAll.run();
  }

  markDelivered(id: number, now: number): void {
    this.s.delivered.run(now, id);
  }

  markFailed(id: number, _now: number, error: string, nextAttemptAt: number): void {
    this.s.failed.run(error, nextAttemptAt, id);
  }

  markDead(id: number, now: number, error: string, options: { report?: boolean } = {}): void {
    this.s.dead.run(error, now, options.report === false ? now : null, id);
  }

  nextDue(notifier: string): number | null {
    return (this.s.nextDue.get(notifier) as number | null) ?? null;
  }

  unreportedFailures(): { notifier: string; dead: number; failingSince: number; lastError: string; upToId: number; lastReportedAt: number | null }[] {
    const rows = this.s.unreported.all() as { notifier: string; dead: number; failing_since: number; up_to_id: number }[];
    return rows.map((r) => ({
      notifier: r.notifier,
      dead: r.dead,
      failingSince: r.failing_since,
      lastError: (this.s.lastError.get(r.notifier) as string | null) ?? '',
      upToId: r.up_to_id,
      lastReportedAt: (this.s.lastReported.get(r.notifier) as number | null) ?? null,
    }));
  }

  report(reported: readonly { notifier: string; upToId: number }[], notices: readonly { notifier: string; message: M }[], now: number, account: string = DEFAULT_ACCOUNT): boolean {
    return this.db
      .transaction(() => {
        let marked = 0;
        for (const r of reported) marked += this.s.markReported.run(now, r.notifier, r.upToId).changes;
        if (marked === 0) return false; // reported by another process meanwhile
        for (const n of notices) this.s.insertOf.run(n.notifier, now, JSON.stringify(n.message), now, account);
        return true;
      })
      .immediate();
  }

  retire(keep: readonly string[], now: number, reason: (notifier: string) => string): number {
    const kept = new Set(keep);
    return this.db
      .transaction(() => {
        let marked = 0;
        for (const notifier of this.s.notifiersWaiting.all() as string[]) {
          if (!kept.has(notifier)) marked += this.s.retire.run(reason(notifier), now, notifier).changes;
        }
        return marked;
      })
      .immediate();
  }

  /** The newest messages created since `since` (at most `limit`), newest first, with their items (`items` of `M`). */
  log<I>(since: number, limit: number, itemsOf: (message: M) => I[]): OutboxLogEntry<I>[] {
    const rows = this.s.since.all(since, limit) as OutboxLogDbRow[];
    return rows.map((r) => toLogEntry(r, this.damaged.read<M>('outbox', r.id, r.message, this.looksRight), itemsOf));
  }

  /** Per notifier: messages waiting (pending or being sent, plus items still grouping), dead and delivered. */
  stats(): OutboxCounts[] {
    return mergeOutboxCounts(this.s.stats.all() as OutboxCounts[], this.s.queuedCount.all() as { notifier: string; n: number }[]);
  }
}
