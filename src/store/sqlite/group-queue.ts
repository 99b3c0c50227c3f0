/**
 * The group_wait queue in `notification_queue`: routed items (JSON of the caller's type `I`)
 * written in the cycle's transaction, read by the grouper (src/alerts/grouper.ts), which decides
 * the batches; `release` then moves a batch into the outbox as one message, atomically. The
 * queue decides nothing: it fetches and persists.
 */
import type Database from 'better-sqlite3';
import type { QueuedItem, QueuedRow, ReleasedBatch } from '../../alerts/repositories.js';
import type { DamagedRows } from '../damaged-rows.js';
import { looksLikeItem } from '../repository-rows.js';

export class SqliteGroupQueue<I, M> {
  private readonly s;

  constructor(
    private readonly db: Database.Database,
    private readonly damaged: DamagedRows,
  ) {
    this.s = {
      enqueue: db.prepare('INSERT INTO notification_queue (notifier, created_at, item) VALUES (?, ?, ?)'),
      notifiers: db.prepare('SELECT DISTINCT notifier FROM notification_queue ORDER BY notifier').pluck(),
      of: db.prepare('SELECT id, created_at, item FROM notification_queue WHERE notifier = ? ORDER BY id LIMIT ?'),
      delete: db.prepare('DELETE FROM notification_queue WHERE id = ?'),
      insertOutbox: db.prepare('INSERT INTO outbox (notifier, created_at, message, next_attempt_at) VALUES (?, ?, ?, ?)'),
    };
  }

  enqueueItems(items: readonly QueuedItem<I>[]): void {
    for (const q of items) this.s.enqueue.run(q.notifier, q.createdAt, JSON.stringify(q.item));
  }

  pending(perNotifier: number): QueuedRow<I>[] {
    return this.db
      .transaction(() => {
        const out: QueuedRow<I>[] = [];
        for (const notifier of this.s.notifiers.all() as string[]) {
          for (const r of this.s.of.all(notifier, perNotifier) as { id: number; created_at: number; item: string }[]) {
            const item = this.damaged.read<I>('notification_queue', r.id, r.item, looksLikeItem);
            if (item === undefined) this.s.delete.run(r.id); // set aside: it cannot be sent
            else out.push({ id: r.id, notifier, createdAt: r.created_at, item });
          }
        }
        return out;
      })
      .immediate();
  }

  release(batches: readonly ReleasedBatch<M>[], now: number): void {
    this.db
      .transaction(() => {
        for (const b of batches) {
          for (const id of b.ids) this.s.delete.run(id);
          if (b.message !== null) this.s.insertOutbox.run(b.notifier, now, JSON.stringify(b.message), now);
        }
      })
      .immediate();
  }
}
