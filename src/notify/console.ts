/**
 * Console channel: one human-readable line per item, written to a stream (stdout by default).
 * Box text has its control characters removed, so a box name cannot move the cursor, clear the
 * screen or forge a second line.
 */
import { cleanText } from './escape.js';
import { NotifyError, safeCause } from './errors.js';
import { failureLines, formatTime, headline, itemLine, testText, type MessageText } from './format.js';
import type { NotificationMessage, Notifier } from './types.js';

/**
 * The lines of one message. Pure. Each starts with the message time:
 * `2026-01-01 00:02:00 UTC FIRING critical box-offline: box SN-0042 "Lobby" (Hall A) disconnected; since ...`.
 */
export function buildConsoleLines(message: NotificationMessage, notifier: string, custom?: Partial<MessageText>): string[] {
  const at = formatTime(message.createdAt);
  if (custom?.title !== undefined || custom?.body !== undefined) {
    // Templates: the title (if any) as the first line, then the body's lines (or the default ones).
    const body = custom.body !== undefined ? custom.body.split('\n') : buildConsoleLines(message, notifier).map((l) => l.slice(at.length + 1));
    return [...(custom.title !== undefined ? [custom.title] : []), ...body].map((l) => `${at} ${l}`);
  }
  switch (message.kind) {
    case 'test':
      return [`${at} TEST ${testText(message, notifier)}`];
    case 'delivery_failure':
      return failureLines(message).map((l) => `${at} DELIVERY FAILURE ${l}`);
    case 'alert':
      return message.items.length === 0 ? [`${at} ${headline(message)}`] : message.items.map((i) => `${at} ${itemLine(i, message.createdAt)}`);
  }
}

/** The subset of a writable stream the console channel needs. */
export interface LineSink {
  write(chunk: string, callback?: (err?: Error | null) => void): boolean;
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

  constructor(private readonly options: ConsoleNotifierOptions) {
    this.name = options.name;
    this.stream = options.stream ?? process.stdout;
  }

  async send(message: NotificationMessage): Promise<void> {
    const text = buildConsoleLines(message, this.name, this.options.render?.(message))
      .map((l) => `${cleanText(l)}\n`)
      .join('');
    await new Promise<void>((resolve, reject) => {
      this.stream.write(text, (err) => {
        if (err) reject(new NotifyError('notify_failed', this.name, `cannot write to the console: ${err.message}`, { retryable: true, cause: safeCause(err, []) }));
        else resolve();
      });
    });
  }
}
