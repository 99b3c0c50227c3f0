/**
 * PagerDuty channel: Events API v2 (`POST https://events.pagerduty.com/v2/enqueue`), one event per
 * alert of a message: `trigger` while it fires (repeats included), `resolve` when it resolved.
 *
 * The `dedup_key` is stable per alert (rule and box, `boxwatch-<fingerprint>`): a message sent
 * again after a failure or a crash, or a repeat, lands on the open incident instead of opening a
 * second one, and the resolve closes it. When an event of a message fails, the whole message is
 * retried by the dispatcher; the events already accepted are deduplicated by PagerDuty.
 * Severity: critical, warning and info map to PagerDuty's of the same name.
 */
import { alertRecords, type AlertRecord } from './alert-records.js';
import { assertHttpUrl, post, type HttpChannel } from './http.js';
import type { TemplateRenderer } from './templates.js';
import type { NotificationMessage, Notifier } from '../domain/notifications.js';
import { isoTime } from '../time-format.js';
import { truncate } from '../text.js';
import { urlSecrets } from '../redact.js';

export const PAGERDUTY_EVENTS_URL = 'https://events.pagerduty.com/v2/enqueue';

export interface PagerDutyEvent {
  routing_key: string;
  event_action: 'trigger' | 'resolve';
  dedup_key: string;
  client: string;
  client_url?: string;
  payload?: {
    summary: string;
    source: string;
    severity: 'critical' | 'error' | 'warning' | 'info';
    timestamp: string;
    component?: string;
    group?: string;
    class: string;
    custom_details: Record<string, string>;
  };
}

/** The dedup_key of an alert. */
export function dedupKey(record: Pick<AlertRecord, 'fingerprint'>): string {
  return `boxwatch-${record.fingerprint}`;
}

function event(r: AlertRecord, routingKey: string, source: string, clientUrl: string): PagerDutyEvent {
  const base = { routing_key: routingKey, dedup_key: dedupKey(r), client: 'boxwatch', ...(clientUrl ? { client_url: clientUrl } : {}) };
  if (r.status === 'resolved') return { ...base, event_action: 'resolve' };
  const serial = r.labels.serial;
  return {
    ...base,
    event_action: 'trigger',
    payload: {
      // PagerDuty's limit: 1024 characters.
      summary: truncate(r.annotations.summary ?? r.labels.alertname ?? 'boxwatch alert', 1024),
      source: serial ?? source,
      severity: r.severity,
      timestamp: isoTime(r.startsAt),
      ...(serial ? { component: serial } : {}),
      ...(r.labels.location ? { group: r.labels.location } : {}),
      class: r.labels.kind ?? r.labels.alertname ?? 'boxwatch',
      custom_details: { ...r.labels, ...r.annotations },
    },
  };
}

/**
 * The events of one message, in order. Pure. `source` names boxwatch for alerts that concern no
 * box; `render` (the templates, per alert) gives each trigger's summary (title) and description (body).
 */
export function buildPagerDutyEvents(
  message: NotificationMessage,
  notifier: string,
  options: { routingKey: string; source?: string; clientUrl?: string; render?: TemplateRenderer },
): PagerDutyEvent[] {
  return alertRecords(message, notifier, options.render).map((r) => event(r, options.routingKey, options.source ?? 'boxwatch', options.clientUrl ?? ''));
}

export interface PagerDutyNotifierOptions {
  name: string;
  /** The integration's routing key: a secret, from the environment. */
  routingKey: string;
  /** Events API URL (default PagerDuty's). */
  url?: string;
  source?: string;
  clientUrl?: string;
  render?: TemplateRenderer;
  timeoutMs?: number;
  now?: () => number;
}

export class PagerDutyNotifier implements Notifier {
  readonly name: string;
  readonly type = 'pagerduty' as const;
  private readonly channel: HttpChannel;
  private readonly url: string;

  constructor(private readonly options: PagerDutyNotifierOptions) {
    this.name = options.name;
    this.url = options.url ?? PAGERDUTY_EVENTS_URL;
    assertHttpUrl(options.name, 'url', this.url);
    this.channel = { notifier: options.name, service: 'PagerDuty', secrets: [options.routingKey, ...(options.url ? urlSecrets(options.url) : [])], timeoutMs: options.timeoutMs };
  }

  preview(message: NotificationMessage): string[] {
    return buildPagerDutyEvents(message, this.name, this.options).map((e) => JSON.stringify(e));
  }

  async send(message: NotificationMessage, signal?: AbortSignal): Promise<void> {
    const events = buildPagerDutyEvents(message, this.name, this.options);
    const headers = { 'content-type': 'application/json', 'user-agent': 'boxwatch' };
    for (const e of events) await post(this.channel, this.url, JSON.stringify(e), headers, { signal, now: this.options.now });
  }
}
