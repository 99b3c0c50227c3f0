/**
 * Plain-text pieces shared by every channel: headlines (e-mail subject, Slack header, console),
 * item descriptions and times. Everything returned here is plain, unescaped text with control
 * characters removed; each channel escapes it for its own format.
 */
import { isFleetKey, fleetLabel } from '../box-id.js';
import { formatDuration } from '../duration.js';
import { cleanText } from './escape.js';
import type { AlertItem, NotificationMessage, Severity } from '../domain/notifications.js';
import { formatTime } from '../time-format.js';
import { highestOf } from '../vocabulary.js';

export { formatTime };

/** `2026-01-01 00:02:00 UTC (5m ago)` relative to `now`; no suffix when `now` is not later. */
export function formatSince(since: number, now: number): string {
  return now > since ? `${formatTime(since)} (${formatDuration(now - since)} ago)` : formatTime(since);
}

/** The highest severity among the items (info when empty). */
export function highestSeverity(items: readonly AlertItem[]): Severity {
  return highestOf(items.map((i) => i.severity));
}

/** Items grouped as they are shown: still-firing ones (firing, repeat) first, then resolved ones. */
export function splitByStatus(items: readonly AlertItem[]): { firing: AlertItem[]; resolved: AlertItem[] } {
  return {
    firing: items.filter((i) => i.status !== 'resolved'),
    resolved: items.filter((i) => i.status === 'resolved'),
  };
}

/** `FIRING`, `RESOLVED`, `FIRING 3, RESOLVED 2`. */
export function statusLabel(items: readonly AlertItem[]): string {
  const { firing, resolved } = splitByStatus(items);
  if (resolved.length === 0) return 'FIRING';
  if (firing.length === 0) return 'RESOLVED';
  return `FIRING ${firing.length}, RESOLVED ${resolved.length}`;
}

/** `box SN-0042 "Lobby"`, or `gateway` for gateway-level items. */
export function boxLabel(item: AlertItem): string {
  if (isFleetKey(item.serial)) return fleetLabel(item.serial);
  const name = item.boxName ? cleanText(item.boxName).trim() : '';
  return name === '' || name === item.serial ? `box ${cleanText(item.serial)}` : `box ${cleanText(item.serial)} "${name}"`;
}

/** A gateway alert's summary, naming its account outside "default": `gateway (acme): gateway unreachable`. */
function fleetSummary(key: string, summary: string): string {
  return key === '' ? summary : `${fleetLabel(key)}: ${summary}`;
}

/** `box SN-0042 "Lobby" disconnected`; gateway-level: the summary alone (`gateway unreachable`). */
export function describeItem(item: AlertItem): string {
  const summary = cleanText(item.summary).trim() || item.rule;
  const text = isFleetKey(item.serial) ? fleetSummary(item.serial, summary) : `${boxLabel(item)} ${summary}`;
  return item.status === 'repeat' ? `${text} (still firing)` : text;
}

/**
 * The one-line headline of a message: the e-mail subject, the Slack header, the first console word.
 * `[FIRING] critical: box SN-0042 "Lobby" disconnected`, `[RESOLVED] warning: ...`,
 * `[FIRING] critical: 30 boxes disconnected`, `[FIRING 3, RESOLVED 2] warning: 5 alerts`.
 */
export function headline(message: NotificationMessage): string {
  if (message.kind === 'test') return '[TEST] boxwatch test notification';
  if (message.kind === 'delivery_failure') {
    const failures = message.failures ?? [];
    const names = failures.map((f) => `"${cleanText(f.notifier)}"`).join(', ');
    const since = Math.min(...failures.map((f) => f.failingSince));
    return failures.length === 0
      ? '[DELIVERY FAILURE] notifications are failing'
      : `[DELIVERY FAILURE] notifications to ${names} are failing since ${formatTime(since)}`;
  }
  const items = message.items;
  const { firing } = splitByStatus(items);
  const severity = highestSeverity(firing.length > 0 ? firing : items);
  return `[${statusLabel(items)}] ${severity}: ${groupDescription(items)}`;
}

function groupDescription(items: readonly AlertItem[]): string {
  const first = items[0];
  if (first === undefined) return 'no alerts';
  if (items.length === 1) return describeItem(first);
  const allBoxes = items.every((i) => !isFleetKey(i.serial));
  const serials = new Set(items.map((i) => i.serial));
  if (allBoxes && serials.size === items.length) {
    const summary = cleanText(first.summary).trim();
    if (summary !== '' && items.every((i) => cleanText(i.summary).trim() === summary)) return `${items.length} boxes ${summary}`;
    if (items.every((i) => i.rule === first.rule)) return `${items.length} boxes: ${cleanText(first.rule)}`;
  }
  return `${items.length} alerts`;
}

/** Value and threshold as text, or undefined when the item has neither. */
export function valueText(item: AlertItem): string | undefined {
  if (item.value === undefined) return undefined;
  if (item.value === null) return 'unknown';
  // A resolved gateway alert's value is the failure it had: not news any more.
  if (item.status === 'resolved' && isFleetKey(item.serial)) return undefined;
  if (typeof item.value === 'number') {
    if (item.ruleKind === 'low_battery') return `${item.value}%`;
    if (item.ruleKind === 'weak_signal') return `${item.value} dBm`;
    if (item.ruleKind === 'stale') return `last seen ${formatDuration(item.value * 1000)} ago`;
  }
  return cleanText(String(item.value));
}

export function thresholdText(item: AlertItem): string | undefined {
  return item.threshold === undefined || item.threshold === null ? undefined : cleanText(String(item.threshold));
}

/** When it fired, and for resolved items when it resolved. */
export function timeText(item: AlertItem, now: number): string {
  if (item.status === 'resolved' && item.resolvedAt != null) {
    return `fired ${formatTime(item.since)}, resolved ${formatTime(item.resolvedAt)} (after ${formatDuration(Math.max(0, item.resolvedAt - item.since))})`;
  }
  return `since ${formatSince(item.since, now)}`;
}

/** `acknowledged by alice: on it (until 2026-01-01 04:00:00 UTC)`; undefined without an ack. */
export function ackText(item: Pick<AlertItem, 'ack'>): string | undefined {
  const ack = item.ack;
  if (ack == null) return undefined;
  const until = ack.until === null ? '' : ` (until ${formatTime(ack.until)})`;
  return `acknowledged by ${cleanText(ack.by)}: ${cleanText(ack.comment)}${until}`;
}

/**
 * One plain line per item (console, e-mail text body):
 * `FIRING critical box-offline: box SN-0042 "Lobby" (Hall A) disconnected; value 12, threshold below 20; since ...`.
 */
export function itemLine(item: AlertItem, now: number): string {
  const location = item.location ? ` (${cleanText(item.location).trim()})` : '';
  const summary = cleanText(item.summary).trim() || item.rule;
  const what = isFleetKey(item.serial) ? fleetSummary(item.serial, summary) : `${boxLabel(item)}${location} ${summary}`;
  const details: string[] = [];
  const value = valueText(item);
  const threshold = thresholdText(item);
  if (value !== undefined) details.push(`value ${value}`);
  if (threshold !== undefined) details.push(`threshold ${threshold}`);
  details.push(timeText(item, now));
  if (item.silencedUntil != null) details.push(`held back by a silence until ${formatTime(item.silencedUntil)}`);
  const acked = ackText(item);
  if (acked !== undefined) details.push(acked);
  const status = item.status === 'repeat' ? 'STILL FIRING' : item.status.toUpperCase();
  return `${status} ${item.severity} ${cleanText(item.rule)}: ${what}; ${details.join('; ')}`;
}

/** The body of a test message. */
export function testText(message: NotificationMessage, notifier: string): string {
  const from = message.source ? ` from ${cleanText(message.source)}` : '';
  return `This is a test notification${from} sent at ${formatTime(message.createdAt)} through the notifier "${cleanText(notifier)}". If you can read it, the notifier works.`;
}

/** One line per failing notifier. */
export function failureLines(message: NotificationMessage): string[] {
  return (message.failures ?? []).map(
    (f) =>
      `Notifications to "${cleanText(f.notifier)}" are failing since ${formatTime(f.failingSince)}: ${f.dead} message${f.dead === 1 ? '' : 's'} given up. Last error: ${cleanText(f.lastError)}`,
  );
}

/** The plain-text body of a message: one line per alert (itemLine), the test text, or one line per failing notifier. */
export function bodyLines(message: NotificationMessage, notifier: string): string[] {
  if (message.kind === 'test') return [testText(message, notifier)];
  if (message.kind === 'delivery_failure') return failureLines(message);
  return message.items.map((i) => itemLine(i, message.createdAt));
}

/** A message as a title and a plain-text body: what the text channels show (and what templates replace). */
export interface MessageText {
  title: string;
  body: string;
}

/** The default title (the headline) and body (bodyLines) of a message. */
export function defaultText(message: NotificationMessage, notifier: string): MessageText {
  return { title: headline(message), body: bodyLines(message, notifier).join('\n') };
}
