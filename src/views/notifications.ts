/**
 * The notification log: every message the outbox holds, per notifier, as people and programs see
 * it (`boxwatch notifications`, `/api/notifications`, the dashboard's alert cards), built by one
 * function, `readNotificationViews`, and written as JSON by one, `notificationJson`. Also where
 * each alert was delivered (`deliveriesOf`), for `boxwatch alerts` and `/api/alerts`.
 *
 * Read side only. The outbox's `last_error` is a NotifyError message, already free of secrets;
 * the configured secrets are redacted from it once more here, as a second guard.
 */
import type { Awaitable } from '../awaitable.js';
import { redact } from '../redact.js';
import type { OutboxEntry } from '../alerts/repositories.js';
import type { AlertItem } from '../domain/notifications.js';
import { isoTime, isoOrNull } from '../time-format.js';
import type { Severity } from '../vocabulary.js';
import { alertId } from '../alerts/types.js';

/** `sending`: an attempt is in flight right now (the dispatcher claimed the message). */
export const NOTIFICATION_STATUSES = ['delivered', 'pending', 'sending', 'dead'] as const;
export type NotificationStatus = (typeof NOTIFICATION_STATUSES)[number];

/** Where the log reads from: the outbox (src/alerts/repositories.ts AlertQueries), newest first. */
export interface NotificationSource {
  outboxSince(since: number): Awaitable<readonly OutboxEntry[]>;
}

export interface NotificationQuery {
  /** Messages created at or after this time. */
  since: number;
  notifier?: string;
  status?: NotificationStatus;
  /** Only messages about this alert (its printable id, `rule/serial`, or the rule of a gateway alert). */
  alert?: string;
}

/** One alert of a message. */
export interface NotifiedAlert {
  /** The alert's printable id. */
  alert: string;
  rule: string;
  serial: string;
  /** What the message said of it: firing, resolved, or repeat. */
  status: AlertItem['status'];
  severity: Severity;
  summary: string;
}

/** One message to one notifier. Times are ms here; notificationJson writes ISO strings. */
export interface NotificationView {
  id: number;
  notifier: string;
  createdAt: number;
  status: NotificationStatus;
  /** Attempts made: the failed ones, plus the one that worked for a delivered message. */
  attempts: number;
  /** Pending: when it is tried next. */
  nextAttemptAt: number | null;
  deliveredAt: number | null;
  /** Dead: when it was given up. */
  gaveUpAt: number | null;
  /** The last failure, secrets redacted. */
  lastError: string | null;
  items: NotifiedAlert[];
}

export interface NotificationOptions {
  /** The configured notifiers' secrets, redacted from errors once more. */
  secrets?: readonly string[];
}

function view(r: OutboxEntry, secrets: readonly string[]): NotificationView {
  return {
    id: r.id,
    notifier: r.notifier,
    createdAt: r.createdAt,
    status: r.status,
    attempts: r.status === 'delivered' ? r.attempts + 1 : r.attempts,
    nextAttemptAt: r.status === 'pending' ? r.nextAttemptAt : null,
    deliveredAt: r.status === 'delivered' ? r.doneAt : null,
    gaveUpAt: r.status === 'dead' ? r.doneAt : null,
    lastError: r.lastError === null ? null : redact(r.lastError, [...secrets]),
    items: r.items.map((i) => ({ alert: alertId(i.rule, i.serial), rule: i.rule, serial: i.serial, status: i.status, severity: i.severity, summary: i.summary })),
  };
}

/** The messages matching the query, newest first (the outbox keeps at most the last 1,000 read). */
export async function readNotificationViews(source: NotificationSource, query: NotificationQuery, options: NotificationOptions = {}): Promise<NotificationView[]> {
  const secrets = options.secrets ?? [];
  return (await source.outboxSince(query.since))
    .filter(
      (r) =>
        (query.notifier === undefined || r.notifier === query.notifier) &&
        (query.status === undefined || r.status === query.status) &&
        (query.alert === undefined || r.items.some((i) => alertId(i.rule, i.serial) === query.alert)),
    )
    .map((r) => view(r, secrets));
}

export interface NotificationJson {
  id: number;
  notifier: string;
  createdAt: string;
  status: NotificationStatus;
  attempts: number;
  nextAttemptAt: string | null;
  deliveredAt: string | null;
  gaveUpAt: string | null;
  /** When it was delivered or given up (the dashboard's `doneAt`). */
  doneAt: string | null;
  lastError: string | null;
  items: NotifiedAlert[];
}

/** The notification view as JSON: the one shape of `boxwatch notifications --format json` and `/api/notifications`. */
export function notificationJson(v: NotificationView): NotificationJson {
  return {
    id: v.id,
    notifier: v.notifier,
    createdAt: isoTime(v.createdAt),
    status: v.status,
    attempts: v.attempts,
    nextAttemptAt: isoOrNull(v.nextAttemptAt),
    deliveredAt: isoOrNull(v.deliveredAt),
    gaveUpAt: isoOrNull(v.gaveUpAt),
    doneAt: isoOrNull(v.deliveredAt ?? v.gaveUpAt),
    lastError: v.lastError,
    items: v.items,
  };
}

/** Where one alert's latest message went, per notifier. */
export interface Delivery {
  notifier: string;
  /** The status of the latest message about the alert to this notifier. */
  status: NotificationStatus;
  /** Its delivery time, or when it was given up, or (pending) when it was queued. */
  at: number;
}

/** Per alert id, the latest message about it to each notifier (notifiers in name order). */
export function deliveriesOf(views: readonly NotificationView[]): Map<string, Delivery[]> {
  const latest = new Map<string, Map<string, NotificationView>>();
  for (const v of views) {
    for (const item of v.items) {
      let byNotifier = latest.get(item.alert);
      if (!byNotifier) latest.set(item.alert, (byNotifier = new Map()));
      const seen = byNotifier.get(v.notifier);
      if (!seen || v.createdAt > seen.createdAt || (v.createdAt === seen.createdAt && v.id > seen.id)) byNotifier.set(v.notifier, v);
    }
  }
  const out = new Map<string, Delivery[]>();
  for (const [alert, byNotifier] of latest) {
    out.set(
      alert,
      [...byNotifier.values()]
        .map((v) => ({ notifier: v.notifier, status: v.status, at: v.deliveredAt ?? v.gaveUpAt ?? v.createdAt }))
        .sort((a, b) => a.notifier.localeCompare(b.notifier)),
    );
  }
  return out;
}
