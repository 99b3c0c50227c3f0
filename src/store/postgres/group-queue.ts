/**
 * The group_wait queue in PostgreSQL (`notification_queue`): routed items (JSON of the caller's
 * type `I`) waiting for the grouper (src/alerts/grouper.ts), which decides the batches; `release`
 * moves a batch into the outbox as one message, atomically.
 *
 * Several processes may share the database, so a release first locks its batch's rows: a batch
 * some of whose items are already gone (another process released them) is left alone, its
 * remaining items released at the next round. An item is never lost and never sent twice.
 *
 * Every item belongs to the account whose cycle queued it, and a released message to the account
 * of its items. With a `fence` (replicas, src/domain/leases.ts) only the fence's account's items
 * are read and released, and a release is refused (LeaseLostError, nothing moved) once the fence
 * no longer holds the account's lease.
 */
import type { QueuedItem, QueuedRow, ReleasedBatch } from '../../alerts/repositories.js';
import { DEFAULT_ACCOUNT } from '../../box-id.js';
import type { Fence } from '../../domain/leases.js';
import type { DamagedRows } from '../damaged-rows.js';
import { looksLikeItem } from '../repository-rows.js';
import type { PostgresDatabase, Transaction } from './database.js';
import { checkFence } from './leases.js';
import { insertMessage } from './outbox.js';

export class PostgresGroupQueue<I, M> {
  constructor(
    private readonly db: PostgresDatabase,
    private readonly damaged: DamagedRows,
  ) {}

  /** Queues routed items of `account` (inside the cycle's transaction `tx` when given). */
  async enqueueItems(items: readonly QueuedItem<I>[], tx: Transaction = this.db, account: string = DEFAULT_ACCOUNT): Promise<void> {
    for (const q of items) {
      await tx.query('INSERT INTO notification_queue (notifier, created_at, item, account) VALUES ($1, $2, $3, $4)', [q.notifier, q.createdAt, JSON.stringify(q.item), account]);
    }
  }

  async pending(perNotifier: number, fence?: Fence): Promise<QueuedRow<I>[]> {
    const rows = await this.db.query<{ id: number; notifier: string; created_at: number; item: string }>(
      `SELECT id, notifier, created_at, item FROM (SELECT *, row_number() OVER (PARTITION BY notifier ORDER BY id) AS n FROM notification_queue${fence === undefined ? '' : ' WHERE account = $2'}) q ` +
        'WHERE n <= $1 ORDER BY notifier COLLATE "C", id',
      fence === undefined ? [perNotifier] : [perNotifier, fence.account],
    );
    const out: QueuedRow<I>[] = [];
    const damaged: number[] = [];
    for (const r of rows) {
      const item = this.damaged.read<I>('notification_queue', r.id, r.item, looksLikeItem);
      if (item === undefined) damaged.push(r.id); // set aside: it cannot be sent
      else out.push({ id: r.id, notifier: r.notifier, createdAt: r.created_at, item });
    }
    if (damaged.length > 0) await this.db.query('DELETE FROM notification_queue WHERE id = ANY($1)', [damaged]);
    return out;
  }

  async release(batches: readonly ReleasedBatch<M>[], now: number, fence?: Fence): Promise<void> {
    await this.db.transaction(async (tx) => {
      if (fence !== undefined) await checkFence(tx, fence);
      for (const b of batches) {
        const ids = [...b.ids];
        const held = await tx.query<{ id: number; account: string }>('SELECT id, account FROM notification_queue WHERE id = ANY($1) ORDER BY id FOR UPDATE', [ids]);
        if (held.length !== new Set(ids).size) continue; // released elsewhere meanwhile
        await tx.query('DELETE FROM notification_queue WHERE id = ANY($1)', [ids]);
        if (b.message !== null) await insertMessage(tx, b.notifier, b.message, now, fence?.account ?? held[0]?.account);
      }
    });
  }
}
