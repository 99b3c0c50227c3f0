/**
 * E-mail channel: nodemailer over an SMTP URL (`smtp://user:pass@host:587`, `smtps://...:465`).
 * `buildEmail` is the pure payload builder (subject, text and HTML bodies); `EmailNotifier` sends
 * it and turns nodemailer's errors into NotifyErrors without the URL or the password.
 */
import { isFleetKey, fleetLabel } from '../box-id.js';
import { createRequire } from 'node:module';
import type nodemailerModule from 'nodemailer';
import type { Mail } from 'nodemailer';
import { cleanText } from './escape.js';
import { NotifyError, type NotifyErrorCode, abortKind } from './errors.js';
import {
  failureLines,
  formatTime,
  headline,
  highestSeverity,
  itemLine,
  splitByStatus,
  testText,
  thresholdText,
  timeText,
  ackText,
  valueText,
  type MessageText,
} from './format.js';
import type { AlertItem, NotificationMessage, Notifier, Severity } from '../domain/notifications.js';
import { escapeHtml } from '../text.js';
import { redact, safeCause, urlSecrets } from '../redact.js';

/** nodemailer is loaded when an e-mail notifier is built, not at start: a daemon without one keeps its memory. */
const load = createRequire(import.meta.url);

export interface EmailContent {
  subject: string;
  text: string;
  html: string;
}

const SEVERITY_COLOUR: Record<Severity, string> = { critical: '#d0021b', warning: '#f5a623', info: '#2f80ed' };
const RESOLVED_COLOUR = '#2eb67d';

/**
 * Builds subject, text and HTML bodies of one message. Pure. `notifier` names the channel in test
 * messages; `custom` holds the rendered `title` (subject) and `body` templates, if any.
 */
export function buildEmail(message: NotificationMessage, notifier: string, custom?: Partial<MessageText>): EmailContent {
  const subject = cleanText(custom?.title ?? headline(message));
  const now = message.createdAt;
  const footer = `Sent by boxwatch${message.source ? ` (${message.source})` : ''} at ${formatTime(now)}.`;

  if (message.kind !== 'alert' || custom?.body !== undefined) {
    const lines = custom?.body !== undefined ? custom.body.split('\n') : message.kind === 'test' ? [testText(message, notifier)] : failureLines(message);
    return {
      subject,
      text: `${subject}\n\n${lines.join('\n')}\n\n-- \n${footer}\n`,
      html: page(subject, '#555555', lines.map((l) => `<p>${escapeHtml(l)}</p>`).join('\n'), footer),
    };
  }

  const { firing, resolved } = splitByStatus(message.items);
  const textSections: string[] = [];
  const htmlSections: string[] = [];
  for (const [title, items] of [
    ['Firing', firing],
    ['Resolved', resolved],
  ] as const) {
    if (items.length === 0) continue;
    textSections.push(`${title} (${items.length}):\n${items.map((i) => `- ${itemLine(i, now)}`).join('\n')}`);
    htmlSections.push(`<h3 style="margin:16px 0 4px">${title} (${items.length})</h3>\n${itemTable(items, now)}`);
  }
  const colour = firing.length > 0 ? SEVERITY_COLOUR[highestSeverity(firing)] : RESOLVED_COLOUR;
  return {
    subject,
    text: `${subject}\n\n${textSections.join('\n\n')}\n\n-- \n${footer}\n`,
    html: page(subject, colour, htmlSections.join('\n'), footer),
  };
}

function page(title: string, colour: string, body: string, footer: string): string {
  return [
    '<!DOCTYPE html>',
    '<html><head><meta charset="utf-8"><title>' + escapeHtml(title) + '</title></head>',
    '<body style="font-family:Arial,Helvetica,sans-serif;font-size:14px;color:#222">',
    `<h2 style="margin:0 0 8px;padding:8px 12px;border-left:6px solid ${colour}">${escapeHtml(title)}</h2>`,
    body,
    `<p style="color:#777;font-size:12px;margin-top:24px">${escapeHtml(footer)}</p>`,
    '</body></html>',
  ].join('\n');
}

const COLUMNS = ['Status', 'Severity', 'Rule', 'Box', 'Name', 'Location', 'Value', 'Threshold', 'When', 'Summary'];

function itemTable(items: readonly AlertItem[], now: number): string {
  const cell = (text: string | undefined): string => `<td style="border:1px solid #ddd;padding:4px 8px">${escapeHtml(text ?? '')}</td>`;
  const head = COLUMNS.map((c) => `<th style="border:1px solid #ddd;padding:4px 8px;text-align:left;background:#f4f4f4">${c}</th>`).join('');
  const rows = items.map((i) => {
    const status = i.status === 'repeat' ? 'still firing' : i.status;
    const colour = i.status === 'resolved' ? RESOLVED_COLOUR : SEVERITY_COLOUR[i.severity];
    return (
      `<tr style="border-left:4px solid ${colour}">` +
      [
        cell(status),
        cell(i.severity),
        cell(i.rule),
        cell(isFleetKey(i.serial) ? fleetLabel(i.serial) : i.serial),
        cell(i.boxName ?? ''),
        cell(i.location ?? ''),
        cell(valueText(i)),
        cell(thresholdText(i)),
        cell(timeText(i, now)),
        cell([i.summary, ackText(i)].filter((t) => t !== undefined).join('; ')),
      ].join('') +
      '</tr>'
    );
  });
  return `<table style="border-collapse:collapse">\n<tr>${head}</tr>\n${rows.join('\n')}\n</table>`;
}

export interface EmailNotifierOptions {
  name: string;
  /** `smtp://user:pass@host:port` or `smtps://...`; query parameters are nodemailer options. */
  smtpUrl: string;
  from: string;
  to: readonly string[];
  /** Connection, greeting and socket timeout in ms (default 15 s). */
  timeoutMs?: number;
  /** The rendered `title` and `body` templates, when configured. */
  render?: (message: NotificationMessage) => Partial<MessageText> | undefined;
}

/** Sends each message as one e-mail to every recipient. */
export class EmailNotifier implements Notifier {
  readonly name: string;
  readonly type = 'email' as const;
  private readonly transport: Mail;
  private readonly secrets: string[];

  constructor(private readonly options: EmailNotifierOptions) {
    this.name = options.name;
    this.secrets = urlSecrets(options.smtpUrl);
    let protocol: string;
    try {
      protocol = new URL(options.smtpUrl).protocol;
    } catch {
      throw new NotifyError('notify_config', options.name, 'smtp_url is not a valid URL', { retryable: false });
    }
    if (protocol !== 'smtp:' && protocol !== 'smtps:') {
      throw new NotifyError('notify_config', options.name, `smtp_url must start with smtp:// or smtps:// (got ${protocol}//)`, {
        retryable: false,
      });
    }
    if (options.to.length === 0) throw new NotifyError('notify_config', options.name, 'no recipients (to)', { retryable: false });
    const timeout = options.timeoutMs ?? 15_000;
    const nodemailer = load('nodemailer') as typeof nodemailerModule;
    this.transport = nodemailer.createTransport({
      url: options.smtpUrl,
      connectionTimeout: timeout,
      greetingTimeout: timeout,
      socketTimeout: timeout,
      disableFileAccess: true,
      disableUrlAccess: true,
    });
  }

  preview(message: NotificationMessage): string[] {
    const content = buildEmail(message, this.name, this.options.render?.(message));
    return [`Subject: ${content.subject}\n\n${content.text}`];
  }

  async send(message: NotificationMessage, signal?: AbortSignal): Promise<void> {
    const content = buildEmail(message, this.name, this.options.render?.(message));
    try {
      await this.transport.sendMail({
        from: this.options.from,
        to: [...this.options.to],
        subject: content.subject,
        text: content.text,
        html: content.html,
        headers: { 'Auto-Submitted': 'auto-generated' },
        signal,
      });
    } catch (err) {
      throw this.wrap(err);
    }
  }

  async close(): Promise<void> {
    this.transport.close();
  }

  private wrap(err: unknown): NotifyError {
    const e = (err ?? {}) as { code?: unknown; responseCode?: unknown; message?: unknown };
    const code = typeof e.code === 'string' ? e.code : undefined;
    const status = typeof e.responseCode === 'number' ? e.responseCode : undefined;
    const detail = redact(typeof e.message === 'string' ? e.message : String(err), this.secrets);
    const [kind, retryable, what] = classifySmtp(code, status, abortKind(err));
    return new NotifyError(kind, this.name, `${what}: ${detail}`, {
      retryable,
      status,
      cause: safeCause(err, this.secrets),
    });
  }
}

/**
 * Classifies a nodemailer error. SMTP 5xx replies are permanent (RFC 5321) except 503 (bad
 * sequence: a new session may succeed); 4xx replies and connection problems are transient.
 */
export function classifySmtp(
  code: string | undefined,
  responseCode: number | undefined,
  abort: 'timeout' | 'abort' | undefined,
): [NotifyErrorCode, boolean, string] {
  if (abort === 'timeout') return ['notify_timeout', true, 'SMTP delivery timed out'];
  if (code === 'EABORT' || abort === 'abort') return ['notify_aborted', true, 'SMTP delivery aborted'];
  if (responseCode !== undefined && responseCode >= 500 && responseCode !== 503) {
    return code === 'EAUTH'
      ? ['notify_auth', false, 'SMTP authentication failed']
      : ['notify_rejected', false, `SMTP server rejected the message (${responseCode})`];
  }
  if (responseCode !== undefined && responseCode >= 400) {
    return ['notify_server_error', true, `SMTP server answered ${responseCode} (temporary)`];
  }
  switch (code) {
    case 'ECONNECTION':
    case 'ESOCKET':
    case 'EDNS':
      return ['notify_unreachable', true, 'cannot reach the SMTP server'];
    case 'ETIMEDOUT':
      return ['notify_timeout', true, 'SMTP server timed out'];
    case 'EAUTH':
    case 'ENOAUTH':
      return ['notify_auth', false, 'SMTP authentication failed'];
    case 'ECONFIG':
    case 'EENVELOPE':
      return ['notify_config', false, 'invalid e-mail settings'];
    default:
      return ['notify_failed', true, 'SMTP delivery failed'];
  }
}
