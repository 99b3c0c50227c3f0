/**
 * Glue from the alert engine to the notifiers: a notification intent plus what the store knows
 * about the box (name, location) becomes one AlertItem of a NotificationMessage (src/notify/).
 */
import type { AlertItem } from '../domain/notifications.js';
import { ackOfEpisode, type Ack } from './acks.js';
import { routes, type NotifierRoute } from './group.js';
import { intentOf } from './state.js';
import type { AlertState, NotificationIntent } from './types.js';

/** The box fields messages show; untrusted text, escaped by the channels. */
export interface BoxLabels {
  name?: string | null;
  location?: string | null;
}

/**
 * One message item for an intent. `since` is when the alert started firing. `ack`: the alert's
 * latest acknowledgement; shown when it is of this firing episode (the resolve of an acknowledged
 * alert says who acknowledged it).
 */
export function toAlertItem(intent: NotificationIntent, box: BoxLabels = {}, ack?: Ack): AlertItem {
  const acked = ackOfEpisode(ack, intent.firingSince);
  return {
    status: intent.type,
    rule: intent.rule,
    ruleKind: intent.kind,
    severity: intent.severity,
    serial: intent.serial,
    boxName: box.name ?? null,
    location: box.location ?? null,
    value: intent.value,
    threshold: intent.threshold,
    since: intent.firingSince ?? intent.createdAt,
    resolvedAt: intent.resolvedAt,
    summary: intent.summary ?? intent.kind.replace(/_/g, ' '),
    ...(acked ? { ack: { by: acked.by, comment: acked.comment, at: acked.at, until: acked.until } } : {}),
  };
}

/**
 * The alerts a notifier was told are firing and that still fire, as `repeat` items: what the
 * resender (src/notify/resend.ts) sends again to receivers that forget alerts they do not hear of.
 */
export function announcedFiringItems(
  states: Iterable<AlertState>,
  route: NotifierRoute,
  boxOf: (serial: string) => BoxLabels | undefined,
  now: number,
): AlertItem[] {
  const items: AlertItem[] = [];
  for (const s of states) {
    if (s.status !== 'firing' || !s.notifiedFiring || !routes(route, s)) continue;
    items.push(toAlertItem(intentOf(s, 'repeat', now), boxOf(s.serial)));
  }
  return items;
}
