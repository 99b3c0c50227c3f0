/**
 * The group_wait queue in `notification_queue`: routed items (JSON of the caller's type `I`)
 * written in the cycle's transaction, read by the grouper (src/alerts/grouper.ts), which decides
 * the batches; `release` then moves a batch into the outbox as one message, atomically. The
 * queue decides nothing: it fetches and persists.
 *
 * Every item belongs to the account whose cycle queued it, and a released message to the account
 * of its items. With a `fence` (replicas, src/domain/leases.ts) only the fence's account's items
 * are read and released, and a release is refused (LeaseLostError, nothing moved) once the fence
 * no longer holds the account's lease.
 */
import type Database from 'better-sqlite3';
import type { QueuedItem, QueuedRow, ReleasedBatch } from '../../alerts/repositories.js';
import { DEFAULT_ACCOUNT } from '../../box-id.js';
import type { Fence } from '../../domain/leases.js';
import type { DamagedRows } from '../damaged-rows.js';
import { looksLikeItem } from '../repository-rows.js';
import { checkFence } from './leases.js';

export class SqliteGroupQueue<I, M> {
  private readonly s;

  constructor(
    private readonly db: Database.Database,
    private readonly damaged: DamagedRows,
  ) {
    this.s = {
      enqueue: db.prepare('INSERT INTO notification_queue (notifier, created_at, item, account) VALUES (?, ?, ?, ?)'),
      notifiers: db.prepare('SELECT DISTINCT notifier FROM notification_queue ORDER BY notifier').pluck(),
      notifiersOf: db.prepare('SELECT DISTINCT notifier FROM notification_queue WHERE account = ? ORDER BY notifier').pluck(),
      of: db.prepare('SELECT id, created_at, item FROM notification_queue WHERE notifier = ? ORDER BY id LIMIT ?'),
      ofAccount: db.prepare('SELECT id, created_at, item FROM notification_queue WHERE account = ? AND notifier = ? ORDER BY id LIMIT ?'),
      delete: db.prepare('DELETE FROM notification_queue WHERE id = ?'),
      accountOf: db.prepare('SELECT account FROM notification_queue WHERE id = ?').pluck(),
      insertOutbox: db.prepare('INSERT INTO outbox (notifier, created_at, message, next_attempt_at, account) VALUES (?, ?, ?, ?, ?)'),
    };
  }

  /** Queues routed items of `account` (inside the cycle's transaction). */
  enqueueItems(items: readonly QueuedItem<I>[], account: string = DEFAULT_ACCOUNT): void {
    for (const q of items) this.s.enqueue.run(q.notifier, q.createdAt, JSON.stringify(q.item), account);
  }

  pending(perNotifier: number, fence?: Fence): QueuedRow<I>[] {
    return this.db
      .transaction(() => {
        const out: QueuedRow<I>[] = [];
        const notifiers = (fence === undefined ? this.s.notifiers.all() : this.s.notifiersOf.all(fence.account)) as string[];
        for (const notifier of notifiers) {
          const rows = (fence === undefined ? this.s.of.all(notifier, perNotifier) : this.s.ofAccount.all(fence.account, notifier, perNotifier)) as { id: number; created_at: number; item: string }[];
          for (const r of rows) {
            const item = this.damaged.read<I>('notification_queue', r.id, r.item, looksLikeItem);
            if (item === undefined) this.s.delete.run(r.id); // set aside: it cannot be sent
            else out.push({ id: r.id, notifier, createdAt: r.created_at, item });
          }
        }
        return out;
      })
      .immediate();
  }

  release(batches: readonly ReleasedBatch<M>[], now: number, fence?: Fence): void {
    this.db
      .transaction(() => {
        if (fence !== undefined) checkFence(this.db, fence);
        for (const b of batches) {
          const first = b.ids[0];
          const account = fence?.account ?? ((first === undefined ? undefined : this.s.accountOf.get(first)) as string | undefined) ?? DEFAULT_ACCOUNT;
          for (const id of b.ids) this.s.delete.run(id);
          if (b.message !== null) this.s.insertOutbox.run(b.notifier, now, JSON.stringify(b.message), now, account);
        }
      })
      .immediate();
  }
}
