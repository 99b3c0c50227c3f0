/**
 * The group stage of the pipeline: moves routed items whose group_wait has passed from the queue
 * into the outbox, one message per batch. What is ready is decided by `planGroups` (group.ts);
 * the queue (GroupQueue, implemented by the store) only fetches and persists.
 *
 * Items queued for a notifier that is no longer configured (removed or renamed by a reload) leave
 * at once as one message each; the dispatcher's start then retires them (dead, with the reason,
 * reported on the remaining notifiers).
 */
import type { Fence } from '../domain/leases.js';
import type { AlertItem, NotificationMessage } from '../domain/notifications.js';
import { planGroups } from './group.js';
import type { GroupQueue, QueuedRow, ReleasedBatch } from './repositories.js';

/** Most items in one message (and read per notifier per pass); more go out in the next pass at once. */
export const GROUP_MAX_ITEMS = 500;

export interface GroupPass {
  /** Notifiers that got a message. */
  released: string[];
  /** When the next waiting group becomes ready (now when a full batch may have left more); null: nothing waits. */
  nextReadyAt: number | null;
}

/** One pass of the group stage at `now`. */
export async function releaseReadyGroups(
  queue: GroupQueue<AlertItem, NotificationMessage>,
  now: number,
  groupWaitMs: number,
  configured: ReadonlySet<string>,
  /** Replicas: only this led account's items, its release fenced (src/domain/leases.ts). */
  fence?: Fence,
): Promise<GroupPass> {
  const pending = await queue.pending(GROUP_MAX_ITEMS, fence);
  const orphans = new Map<string, QueuedRow<AlertItem>[]>();
  const known: QueuedRow<AlertItem>[] = [];
  for (const row of pending) {
    if (configured.has(row.notifier)) known.push(row);
    else orphans.set(row.notifier, [...(orphans.get(row.notifier) ?? []), row]);
  }
  const plan = planGroups(known, now, groupWaitMs, { maxItems: GROUP_MAX_ITEMS });
  const batches: ReleasedBatch<NotificationMessage>[] = [
    ...plan.ready.map((b) => batch(b.notifier, b.items, now)),
    ...[...orphans].map(([notifier, rows]) => batch(notifier, rows, now)),
  ];
  if (batches.length > 0) await queue.release(batches, now, fence);
  const full = plan.ready.some((b) => b.items.length === GROUP_MAX_ITEMS);
  return { released: [...new Set(batches.map((b) => b.notifier))], nextReadyAt: full ? now : plan.nextReadyAt };
}

function batch(notifier: string, rows: readonly QueuedRow<AlertItem>[], now: number): ReleasedBatch<NotificationMessage> {
  return { notifier, ids: rows.map((r) => r.id), message: { kind: 'alert', items: rows.map((r) => r.item), createdAt: now } };
}
