/**
 * A message as a list of Prometheus-style alerts (labels, annotations, start and end): the common
 * form of the channels that speak in alerts rather than text (webhook in Alertmanager's format,
 * Alertmanager itself, PagerDuty). Pure.
 *
 * - Labels: `alertname` (the rule name), `rule` (the same), `kind`, `severity`, and for box
 *   alerts `serial`, `box` (the box name) and `location`. Empty values are left out (Alertmanager
 *   treats an empty label as absent).
 * - The fingerprint identifies one alert (rule and box) across firing, repeats and resolve, so that
 *   a receiver, Alertmanager or PagerDuty (`dedup_key`) sees one alert, not one per message.
 * - A test message is one info alert `boxwatch_test`; a delivery-failure message is one critical
 *   alert `boxwatch_delivery_failure` per failing notifier (label `notifier`).
 */
import { isFleetKey } from '../box-id.js';
import { createHash } from 'node:crypto';
import { cleanText } from './escape.js';
import { describeItem, failureLines, itemLine, testText, thresholdText, valueText, type MessageText } from './format.js';
import type { AlertItem, NotificationMessage, Severity } from '../domain/notifications.js';

export interface AlertRecord {
  status: 'firing' | 'resolved';
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: number;
  /** When it resolved; null while firing. */
  endsAt: number | null;
  /** 16 hex digits, stable for one alert (rule and box). */
  fingerprint: string;
  severity: Severity;
  /** The alert item behind the record (absent for test and delivery-failure records). */
  item?: AlertItem;
}

/** 16 hex digits identifying an alert, from the labels that do not change while it lives. */
export function fingerprintOf(identity: readonly string[]): string {
  return createHash('sha256').update(identity.join('\u0000')).digest('hex').slice(0, 16);
}

/** The labels of a box or gateway alert. */
export function alertLabels(item: AlertItem): Record<string, string> {
  const labels: Record<string, string> = {
    alertname: cleanText(item.rule),
    rule: cleanText(item.rule),
    kind: cleanText(item.ruleKind),
    severity: item.severity,
  };
  if (!isFleetKey(item.serial)) {
    labels.serial = cleanText(item.serial);
    if (item.boxName) labels.box = cleanText(item.boxName).trim();
    if (item.location) labels.location = cleanText(item.location).trim();
  }
  for (const [k, v] of Object.entries(labels)) if (v === '') delete labels[k];
  return labels;
}

function itemRecord(item: AlertItem, now: number, custom: Partial<MessageText> | undefined): AlertRecord {
  const annotations: Record<string, string> = { summary: cleanText(custom?.title ?? describeItem(item)), description: custom?.body ?? itemLine(item, now) };
  const value = valueText(item);
  const threshold = thresholdText(item);
  if (value !== undefined) annotations.value = value;
  if (threshold !== undefined) annotations.threshold = threshold;
  const resolved = item.status === 'resolved';
  return {
    status: resolved ? 'resolved' : 'firing',
    labels: alertLabels(item),
    annotations,
    startsAt: item.since,
    endsAt: resolved ? Math.max(item.resolvedAt ?? now, item.since) : null,
    fingerprint: fingerprintOf([item.rule, item.serial]),
    severity: item.severity,
    item,
  };
}

/**
 * The alerts of one message, in the message's order. `render` (the notifier's templates) is
 * applied to each alert on its own: its title is the alert's `summary`, its body the `description`.
 */
export function alertRecords(message: NotificationMessage, notifier: string, render?: (message: NotificationMessage) => Partial<MessageText> | undefined): AlertRecord[] {
  if (message.kind === 'alert') return message.items.map((i) => itemRecord(i, message.createdAt, render?.({ ...message, items: [i] })));
  if (message.kind === 'test') {
    const text = testText(message, notifier);
    return [
      {
        status: 'firing',
        labels: { alertname: 'boxwatch_test', severity: 'info' },
        annotations: { summary: 'boxwatch test notification', description: text },
        startsAt: message.createdAt,
        endsAt: null,
        fingerprint: fingerprintOf(['boxwatch_test', String(message.createdAt)]),
        severity: 'info',
      },
    ];
  }
  const lines = failureLines(message);
  return (message.failures ?? []).map((f, i) => ({
    status: 'firing',
    labels: { alertname: 'boxwatch_delivery_failure', severity: 'critical', notifier: cleanText(f.notifier) },
    annotations: { summary: `notifications to "${cleanText(f.notifier)}" are failing`, description: lines[i] ?? '' },
    startsAt: f.failingSince,
    endsAt: null,
    fingerprint: fingerprintOf(['boxwatch_delivery_failure', f.notifier]),
    severity: 'critical',
  }));
}

/** The labels (or annotations) every record shares, as Alertmanager's commonLabels. */
export function commonPairs(maps: readonly Record<string, string>[]): Record<string, string> {
  const [first, ...rest] = maps;
  if (first === undefined) return {};
  return Object.fromEntries(Object.entries(first).filter(([k, v]) => rest.every((m) => m[k] === v)));
}

/**
 * A key for one message to one notifier, the same on every retry and after a restart (the
 * outbox stores the message as it is): a receiver that saw the key already can drop the copy.
 */
export function idempotencyKey(notifier: string, message: NotificationMessage): string {
  return createHash('sha256').update(notifier).update('\u0000').update(JSON.stringify(message)).digest('hex').slice(0, 32);
}
