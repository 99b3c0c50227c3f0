/**
 * Alertmanager channel: forwards alerts to an existing Alertmanager (`POST /api/v2/alerts`), so
 * operators keep their routing, silences and receivers.
 *
 * As Prometheus does, a firing alert is sent with `endsAt` a few resend intervals ahead and sent
 * again every `resend_interval` while it fires (the app's resender, src/notify/resend.ts): if
 * boxwatch stops, Alertmanager resolves the alert by itself once endsAt passes; while boxwatch
 * runs, the alert never resolves by timeout. A resolved alert is sent with its real `endsAt`.
 * Labels: alertname, rule, kind, severity, serial, box, location (src/notify/alert-records.ts).
 */
import { alertRecords } from './alert-records.js';
import { assertHttpUrl, post, type HttpChannel } from './http.js';
import type { TemplateRenderer } from './templates.js';
import type { NotificationMessage, Notifier } from '../domain/notifications.js';
import { isoTime } from '../time-format.js';
import { urlSecrets } from '../redact.js';
import { systemClock } from '../clock.js';

/** Alertmanager's postableAlert (api/v2/openapi.yaml). */
export interface PostableAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
  generatorURL?: string;
}

/** Prometheus: a firing alert is valid for 4 resend intervals (rules/alerting.go, `resendDelay`). */
export const VALIDITY_RESENDS = 4;

/** The request body for one message. Pure. `now` is the time of sending. */
export function buildAlertmanagerAlerts(
  message: NotificationMessage,
  notifier: string,
  now: number,
  resendIntervalMs: number,
  options: { generatorUrl?: string; render?: TemplateRenderer } = {},
): PostableAlert[] {
  const generatorUrl = options.generatorUrl ?? '';
  return alertRecords(message, notifier, options.render).map((r) => ({
    labels: r.labels,
    annotations: r.annotations,
    startsAt: isoTime(r.startsAt),
    endsAt: isoTime(r.endsAt ?? now + VALIDITY_RESENDS * resendIntervalMs),
    ...(generatorUrl ? { generatorURL: generatorUrl } : {}),
  }));
}

export interface AlertmanagerNotifierOptions {
  name: string;
  /** Alertmanager's base URL (`http://alertmanager:9093`); user:password in it is sent as basic auth. */
  url: string;
  /** How often firing alerts are sent again (default 1 min, Prometheus' resend_delay). */
  resendIntervalMs?: number;
  generatorUrl?: string;
  /** The templates, per alert: title as `summary`, body as `description`. */
  render?: TemplateRenderer;
  timeoutMs?: number;
  now?: () => number;
}

export class AlertmanagerNotifier implements Notifier {
  readonly name: string;
  readonly type = 'alertmanager' as const;
  readonly resendIntervalMs: number;
  private readonly channel: HttpChannel;
  private readonly endpoint: string;
  private readonly headers: Record<string, string>;

  constructor(private readonly options: AlertmanagerNotifierOptions) {
    this.name = options.name;
    this.resendIntervalMs = options.resendIntervalMs ?? 60_000;
    assertHttpUrl(options.name, 'url', options.url);
    const url = new URL(options.url);
    this.headers = { 'content-type': 'application/json', 'user-agent': 'boxwatch' };
    if (url.username !== '' || url.password !== '') {
      const user = decodeURIComponent(url.username);
      const password = decodeURIComponent(url.password);
      this.headers.authorization = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
      url.username = '';
      url.password = '';
    }
    this.endpoint = `${url.origin}${url.pathname.replace(/\/+$/, '')}/api/v2/alerts`;
    const secrets = [...urlSecrets(options.url), ...(this.headers.authorization ? [this.headers.authorization.slice(6)] : [])];
    this.channel = { notifier: options.name, service: 'Alertmanager', secrets, timeoutMs: options.timeoutMs };
  }

  private alerts(message: NotificationMessage): PostableAlert[] {
    return buildAlertmanagerAlerts(message, this.name, (this.options.now ?? systemClock.now)(), this.resendIntervalMs, this.options);
  }

  preview(message: NotificationMessage): string[] {
    const alerts = this.alerts(message);
    return alerts.length === 0 ? [] : [JSON.stringify(alerts)];
  }

  async send(message: NotificationMessage, signal?: AbortSignal): Promise<void> {
    const alerts = this.alerts(message);
    if (alerts.length === 0) return;
    await post(this.channel, this.endpoint, JSON.stringify(alerts), this.headers, { signal, now: this.options.now });
  }
}
