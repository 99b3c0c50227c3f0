/**
 * Notifier templates: optional `title` and `body` per notifier, in LiquidJS (the engine Uptime Kuma
 * uses): logic-less enough to be safe, maintained, no access to the file system or to JavaScript.
 *
 * Sandbox: templates come from the configuration only (an in-memory empty template map, so
 * `include`/`render`/`layout` find nothing), only own properties of the plain data below are
 * visible, and parse and render are bounded in time and memory (`LIMITS`, src/liquid.ts).
 *
 * Variables (docs/notifications.md#templates): `status`, `kind`, `severity`, `counts`, `alerts[]`
 * (rule, kind, severity, status, serial, name, location, value, threshold, since, resolved_at,
 * duration, summary, line, link, acked_by, ack_comment), `failures[]`, `fleet`, `notifier`,
 * `source`, `created_at`, and `default.title` / `default.body` (the built-in texts).
 *
 * A template that does not parse is a configuration error naming the notifier and the line
 * (`templateProblem` of src/liquid.ts, called by the config schema). A template that fails at render time (a
 * limit, a bad filter argument) falls back to the default text and is logged: never a lost
 * notification.
 */
import { isFleetKey } from '../box-id.js';
import type { Template } from 'liquidjs';
import { formatDuration } from '../duration.js';
import { liquidEngine } from '../liquid.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import { cleanText } from './escape.js';
import { defaultText, formatTime, highestSeverity, itemLine, splitByStatus, thresholdText, valueText, type MessageText } from './format.js';
import type { AlertItem, NotificationMessage } from '../domain/notifications.js';

/** Counts of the fleet at the time of sending (from the store); absent where no store is at hand. */
export interface FleetStats {
  boxes: number;
  connected: number;
  disconnected: number;
  firingAlerts: number;
}

/** One alert as templates see it: plain strings and numbers only. */
function alertVariables(item: AlertItem, now: number, link: ((serial: string) => string | undefined) | undefined): Record<string, unknown> {
  const end = item.status === 'resolved' && item.resolvedAt != null ? item.resolvedAt : now;
  return {
    status: item.status === 'repeat' ? 'firing' : item.status,
    repeat: item.status === 'repeat',
    rule: cleanText(item.rule),
    kind: cleanText(item.ruleKind),
    severity: item.severity,
    serial: cleanText(item.serial),
    name: item.boxName ? cleanText(item.boxName) : '',
    location: item.location ? cleanText(item.location) : '',
    value: valueText(item) ?? '',
    threshold: thresholdText(item) ?? '',
    since: formatTime(item.since),
    resolved_at: item.status === 'resolved' && item.resolvedAt != null ? formatTime(item.resolvedAt) : '',
    duration: formatDuration(Math.max(0, end - item.since)),
    summary: cleanText(item.summary),
    line: itemLine(item, now),
    link: (!isFleetKey(item.serial) ? link?.(item.serial) : undefined) ?? '',
    acked_by: item.ack ? cleanText(item.ack.by) : '',
    ack_comment: item.ack ? cleanText(item.ack.comment) : '',
  };
}

export interface TemplateContextOptions {
  fleet?: FleetStats;
  /** The dashboard page of a box, when the dashboard is served. */
  link?: (serial: string) => string | undefined;
}

/** The variables of one message. Pure. */
export function templateContext(message: NotificationMessage, notifier: string, options: TemplateContextOptions = {}): Record<string, unknown> {
  const { firing, resolved } = splitByStatus(message.items);
  const defaults = defaultText(message, notifier);
  return {
    kind: message.kind,
    status: firing.length > 0 || message.kind !== 'alert' ? 'firing' : 'resolved',
    severity: message.kind === 'delivery_failure' ? 'critical' : highestSeverity(firing.length > 0 ? firing : message.items),
    counts: { firing: firing.length, resolved: resolved.length, total: message.items.length },
    alerts: message.items.map((i) => alertVariables(i, message.createdAt, options.link)),
    failures: (message.failures ?? []).map((f) => ({ notifier: cleanText(f.notifier), since: formatTime(f.failingSince), dead: f.dead, last_error: cleanText(f.lastError) })),
    fleet: options.fleet
      ? { boxes: options.fleet.boxes, connected: options.fleet.connected, disconnected: options.fleet.disconnected, firing_alerts: options.fleet.firingAlerts }
      : { boxes: 0, connected: 0, disconnected: 0, firing_alerts: 0 },
    notifier,
    source: message.source ? cleanText(message.source) : '',
    created_at: formatTime(message.createdAt),
    default: defaults,
  };
}

export interface NotifierTemplates {
  title?: string;
  body?: string;
}

/** A template that failed at render time (its part then falls back to the default text). */
export interface TemplateFailure {
  notifier: string;
  /** The template that failed, or `variables` when the message could not be turned into variables. */
  part: keyof MessageText | 'variables';
  error: string;
}

/** Logs a render failure as a warning (the daemon's sink). */
export function logTemplateFailure(logger: Logger): (failure: TemplateFailure) => void {
  return (f) => logger.warn({ notifier: f.notifier, template: f.part, err: f.error }, 'template failed to render; the default text is used');
}

export interface TemplateRendererOptions extends TemplateContextOptions {
  /** Told of every render failure (the daemon logs it; `notify-test --render` prints it). */
  onFailure?: (failure: TemplateFailure) => void;
  /** Fleet counts at sending time (overrides `fleet`). */
  fleetNow?: () => FleetStats | undefined;
  /**
   * Escaping of every `{{ output }}` (the webhook's custom body: JSON string escaping); `| raw`
   * outputs as it is. Default none: channels escape the rendered text for their markup.
   */
  outputEscape?: (value: unknown) => string;
}

/**
 * The rendered templates of a notifier, per message: `undefined` for a template that is not set
 * or that failed (logged), so the channel uses its default for that part.
 */
export type TemplateRenderer = (message: NotificationMessage) => Partial<MessageText> | undefined;

/** Compiles a notifier's templates. Throws when one does not parse (the config schema reports it first). */
export function templateRenderer(notifier: string, templates: NotifierTemplates, options: TemplateRendererOptions = {}): TemplateRenderer | undefined {
  if (templates.title === undefined && templates.body === undefined) return undefined;
  const liquid = liquidEngine(options.outputEscape);
  const compiled: { part: keyof MessageText; template: Template[] }[] = [];
  for (const part of ['title', 'body'] as const) {
    const text = templates[part];
    if (text !== undefined) compiled.push({ part, template: liquid.parse(text) });
  }
  return (message) => {
    let context: Record<string, unknown>;
    try {
      context = templateContext(message, notifier, { ...options, fleet: options.fleetNow?.() ?? options.fleet });
    } catch (err) {
      options.onFailure?.({ notifier, part: 'variables', error: errorMessage(err) });
      return undefined;
    }
    const out: Partial<MessageText> = {};
    for (const { part, template } of compiled) {
      try {
        out[part] = String(liquid.renderSync(template, context)).trim();
      } catch (err) {
        options.onFailure?.({ notifier, part, error: errorMessage(err) });
      }
    }
    return out;
  };
}

/** JSON string escaping without the quotes: `{"text": "{{ alerts[0].name }}"}` stays valid JSON. */
export function jsonStringEscape(value: unknown): string {
  const text = typeof value === 'string' ? value : value === undefined || value === null ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);
  return JSON.stringify(text).slice(1, -1);
}
