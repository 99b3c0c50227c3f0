/**
 * Generic webhook channel: POSTs JSON in Alertmanager's webhook format (version 4), so that any
 * receiver written for Alertmanager works unchanged; or a custom body rendered from the notifier's
 * `body` template.
 *
 * Headers: `Idempotency-Key` (the same for every retry of one message), custom `headers` from the
 * configuration, and with `hmac_secret` a signature a receiver can check:
 *   X-Boxwatch-Timestamp: <unix seconds>
 *   X-Boxwatch-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>
 * (the timestamp is signed with the body, so a captured request cannot be replayed later with a
 * new timestamp; receivers should refuse timestamps more than a few minutes old).
 */
import { createHmac } from 'node:crypto';
import { alertRecords, commonPairs, idempotencyKey, type AlertRecord } from './alert-records.js';
import { assertHttpUrl, post, type HttpChannel } from './http.js';
import type { TemplateRenderer } from './templates.js';
import type { NotificationMessage, Notifier } from '../domain/notifications.js';
import { isoTime } from '../time-format.js';
import { urlSecrets } from '../redact.js';
import { systemClock } from '../clock.js';

/** Alertmanager's zero time, written as endsAt of firing alerts. */
export const ZERO_TIME = '0001-01-01T00:00:00Z';

export interface WebhookAlert {
  status: 'firing' | 'resolved';
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
  generatorURL: string;
  fingerprint: string;
}

/** Alertmanager's webhook message, version 4. */
export interface WebhookPayload {
  version: '4';
  groupKey: string;
  truncatedAlerts: number;
  status: 'firing' | 'resolved';
  receiver: string;
  groupLabels: Record<string, string>;
  commonLabels: Record<string, string>;
  commonAnnotations: Record<string, string>;
  externalURL: string;
  alerts: WebhookAlert[];
}

function webhookAlert(r: AlertRecord, generatorURL: string): WebhookAlert {
  return {
    status: r.status,
    labels: r.labels,
    annotations: r.annotations,
    startsAt: isoTime(r.startsAt),
    endsAt: r.endsAt === null ? ZERO_TIME : isoTime(r.endsAt),
    generatorURL,
    fingerprint: r.fingerprint,
  };
}

/**
 * The webhook body of one message. Pure. `externalUrl`: where people can look (the dashboard), or
 * ''. `render`: the notifier's title template, as each alert's summary annotation.
 */
export function buildWebhookPayload(message: NotificationMessage, notifier: string, externalUrl = '', render?: TemplateRenderer): WebhookPayload {
  const records = alertRecords(message, notifier, render);
  return {
    version: '4',
    groupKey: `{}:{receiver=${JSON.stringify(notifier)}}`,
    truncatedAlerts: 0,
    status: records.some((r) => r.status === 'firing') ? 'firing' : 'resolved',
    receiver: notifier,
    groupLabels: {},
    commonLabels: commonPairs(records.map((r) => r.labels)),
    commonAnnotations: commonPairs(records.map((r) => r.annotations)),
    externalURL: externalUrl,
    alerts: records.map((r) => webhookAlert(r, externalUrl)),
  };
}

/** `sha256=<hex>`: HMAC-SHA256 with `secret` over `<timestamp>.<body>`. */
export function webhookSignature(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

export interface WebhookNotifierOptions {
  name: string;
  /** A secret when it carries a token: never logged. */
  url: string;
  hmacSecret?: string;
  /** Extra headers (values may be secrets: redacted from errors). */
  headers?: Readonly<Record<string, string>>;
  /** A custom body (the `body` template); undefined (or a failed render): Alertmanager's format. */
  renderBody?: (message: NotificationMessage) => string | undefined;
  /** The `title` template: each alert's summary annotation. */
  render?: TemplateRenderer;
  externalUrl?: string;
  timeoutMs?: number;
  now?: () => number;
}

export class WebhookNotifier implements Notifier {
  readonly name: string;
  readonly type = 'webhook' as const;
  private readonly channel: HttpChannel;

  constructor(private readonly options: WebhookNotifierOptions) {
    this.name = options.name;
    const secrets = [...urlSecrets(options.url), ...Object.values(options.headers ?? {}), ...(options.hmacSecret ? [options.hmacSecret] : [])];
    this.channel = { notifier: options.name, service: 'the webhook', secrets, timeoutMs: options.timeoutMs };
    assertHttpUrl(options.name, 'url', options.url);
  }

  private body(message: NotificationMessage): string {
    return this.options.renderBody?.(message) ?? JSON.stringify(buildWebhookPayload(message, this.name, this.options.externalUrl, this.options.render));
  }

  preview(message: NotificationMessage): string[] {
    return [this.body(message)];
  }

  async send(message: NotificationMessage, signal?: AbortSignal): Promise<void> {
    const body = this.body(message);
    const headers: Record<string, string> = {
      ...this.options.headers,
      'content-type': 'application/json',
      'user-agent': 'boxwatch',
      'idempotency-key': idempotencyKey(this.name, message),
    };
    if (this.options.hmacSecret) {
      const timestamp = Math.floor((this.options.now ?? systemClock.now)() / 1000);
      headers['x-boxwatch-timestamp'] = String(timestamp);
      headers['x-boxwatch-signature'] = webhookSignature(this.options.hmacSecret, timestamp, body);
    }
    await post(this.channel, this.options.url, body, headers, { signal, now: this.options.now });
  }
}
