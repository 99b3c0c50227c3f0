/**
 * What the resender resends to a notifier: the firing alerts routed to it that it was told about,
 * with their boxes' labels from the fleet snapshot. Replicas: each resends the alerts of the
 * accounts it leads, so each alert once.
 */
import { announcedFiringItems } from '../alerts/message.js';
import type { AlertState } from '../alerts/types.js';
import type { Awaitable } from '../awaitable.js';
import { accountOf } from '../box-id.js';
import type { BoxState } from '../domain/store.js';
import type { AlertItem } from '../domain/notifications.js';

export function firingToResend(o: {
  /** The configured notifiers' routes (`notifiers:`). */
  routes: readonly ({ name: string } & Parameters<typeof announcedFiringItems>[1])[];
  /** The fleet snapshot: the boxes by serial are built once per change of the fleet, not read per resend. */
  snapshot: { memo<T>(key: string, compute: (boxes: BoxState[]) => T): Promise<T> };
  states: () => Awaitable<ReadonlyMap<string, AlertState>>;
  /** Whether this process works for the account now (replicas: leads it). */
  holds: (account: string) => boolean;
}): (notifier: string, now: number) => Promise<AlertItem[]> {
  return async (name, now) => {
    const route = o.routes.find((n) => n.name === name) ?? {};
    const boxes = await o.snapshot.memo('resender: boxes by serial', (list) => new Map(list.map((b) => [b.serial, b])));
    const items = announcedFiringItems((await o.states()).values(), route, (serial) => boxes.get(serial), now);
    return items.filter((item) => o.holds(accountOf(item.serial)));
  };
}
