/**
 * Console channel: one block per message, like the e-mail. An alert group is a header line
 * (`2026-01-01 00:05:00 UTC FIRING 21, RESOLVED 1 · warning`) and one short line per alert:
 * status, serial and name, what is wrong (the summary, with its unit), then the rule and how long.
 * FIRING, RESOLVED and the severity are coloured when the sink is a terminal that wants colour
 * (`LineSink.colour`); never otherwise. Box text has its control characters removed, so a box
 * name cannot move the cursor, clear the screen or forge a second line.
 */
import { isFleetKey, fleetLabel } from '../box-id.js';
import { formatDuration } from '../duration.js';
import { cleanText } from './escape.js';
import { NotifyError } from './errors.js';
import { ackText, boxLabel, failureLines, formatTime, highestSeverity, splitByStatus, testText, type MessageText } from './format.js';
import type { AlertItem, NotificationMessage, Notifier, Severity } from '../domain/notifications.js';
import { safeCause } from '../redact.js';

const ANSI = { red: 31, green: 32, yellow: 33, cyan: 36, bold: 1 } as const;
type Style = keyof typeof ANSI;

const STATUS_STYLE: Record<string, Style> = { FIRING: 'red', 'STILL FIRING': 'red', RESOLVED: 'green' };
const SEVERITY_STYLE: Record<Severity, Style> = { critical: 'red', warning: 'yellow', info: 'cyan' };

type Paint = (text: string, style: Style) => string;
const plain: Paint = (text) => text;
const ansi: Paint = (text, style) => `\u001b[${ANSI[style]}m${text}\u001b[0m`;

/** `FIRING 21, RESOLVED 1`, `FIRING 1`, `RESOLVED 3`. */
function counts(items: readonly AlertItem[], paint: Paint): string {
  const { firing, resolved } = splitByStatus(items);
  return [
    ...(firing.length > 0 ? [`${paint('FIRING', 'red')} ${firing.length}`] : []),
    ...(resolved.length > 0 ? [`${paint('RESOLVED', 'green')} ${resolved.length}`] : []),
  ].join(', ');
}

/** A duration to the second (`0s`, `45s`, `20m`): alert times are not measured in ms. */
function seconds(ms: number): string {
  return ms < 1000 ? '0s' : formatDuration(ms);
}

/** `  FIRING    BX-00003 "Front desk 4"  battery 12% below 20%  · battery-low, for 5m`. */
function itemLine(item: AlertItem, now: number, paint: Paint): string {
  const status = item.status === 'repeat' ? 'STILL FIRING' : item.status.toUpperCase();
  const who = isFleetKey(item.serial) ? fleetLabel(item.serial) : boxLabel(item).replace(/^box /, '');
  const what = cleanText(item.summary).trim() || cleanText(item.rule);
  const how =
    item.status === 'resolved' && item.resolvedAt != null
      ? `after ${seconds(item.resolvedAt - item.since)}`
      : `for ${seconds(now - item.since)}`;
  const held = item.silencedUntil != null ? `, held back by a silence until ${formatTime(item.silencedUntil)}` : '';
  const acked = ackText(item);
  return `  ${paint(status.padEnd(8), STATUS_STYLE[status] ?? 'bold')}  ${who}  ${what}  · ${cleanText(item.rule)}, ${how}${held}${acked === undefined ? '' : `, ${acked}`}`;
}

/**
 * The lines of one message (pure). `colour` adds ANSI colours to status and severity words;
 * `custom` holds the rendered `title` (the header line, after the time) and `body` (the lines
 * under it) templates, if any.
 */
export function buildConsoleLines(message: NotificationMessage, notifier: string, options: { colour?: boolean; custom?: Partial<MessageText> } = {}): string[] {
  const paint = options.colour ? ansi : plain;
  const at = formatTime(message.createdAt);
  const { custom } = options;
  if (custom?.title !== undefined || custom?.body !== undefined) {
    // Templates replace the header line (title) and the lines under it (body); a part not set keeps its default.
    const [header = at, ...lines] = buildConsoleLines(message, notifier, { colour: options.colour });
    return [
      custom.title !== undefined ? `${at} ${cleanText(custom.title)}` : header,
      ...(custom.body !== undefined ? custom.body.split('\n').map(cleanText) : lines),
    ];
  }
  switch (message.kind) {
    case 'test':
      return [`${at} TEST ${testText(message, notifier)}`];
    case 'delivery_failure':
      return failureLines(message).map((l) => `${at} DELIVERY FAILURE ${l}`);
    case 'alert': {
      const { firing } = splitByStatus(message.items);
      const severity = highestSeverity(firing.length > 0 ? firing : message.items);
      const header = `${at} ${message.items.length === 0 ? 'no alerts' : counts(message.items, paint)} · ${paint(severity, SEVERITY_STYLE[severity])}`;
      return [header, ...message.items.map((i) => itemLine(i, message.createdAt, paint))];
    }
  }
}

/** The subset of a writable stream the console channel needs. */
export interface LineSink {
  write(chunk: string, callback?: (err?: Error | null) => void): boolean;
  /** True when this is a terminal that wants colour (not piped, no NO_COLOR). */
  readonly colour?: boolean;
}

/** Colour on a terminal, never when piped or when NO_COLOR is set (https://no-color.org). */
export function wantsColour(isTTY: boolean, env: NodeJS.ProcessEnv): boolean {
  return isTTY && (env.NO_COLOR === undefined || env.NO_COLOR === '');
}

export interface ConsoleNotifierOptions {
  name: string;
  stream?: LineSink;
  /** The rendered `title` and `body` templates, when configured. */
  render?: (message: NotificationMessage) => Partial<MessageText> | undefined;
}

export class ConsoleNotifier implements Notifier {
  readonly name: string;
  readonly type = 'console' as const;
  private readonly stream: LineSink;
  private readonly colour: boolean;

  constructor(private readonly options: ConsoleNotifierOptions) {
    this.name = options.name;
    this.stream = options.stream ?? process.stdout;
    this.colour = options.stream ? options.stream.colour === true : wantsColour(Boolean(process.stdout.isTTY), process.env);
  }

  preview(message: NotificationMessage): string[] {
    return [buildConsoleLines(message, this.name, { custom: this.options.render?.(message) }).join('\n')];
  }

  async send(message: NotificationMessage): Promise<void> {
    // Every piece of box text is cleaned where the line is built; colours are added afterwards.
    const text = buildConsoleLines(message, this.name, { colour: this.colour, custom: this.options.render?.(message) })
      .map((l) => `${l}\n`)
      .join('');
    await new Promise<void>((resolve, reject) => {
      this.stream.write(text, (err) => {
        if (err) reject(new NotifyError('notify_failed', this.name, `cannot write to the console: ${err.message}`, { retryable: true, cause: safeCause(err, []) }));
        else resolve();
      });
    });
  }
}
