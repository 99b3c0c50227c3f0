/**
 * Console channel: one human-readable line per item, written to a stream (stdout by default).
 * Box text has its control characters removed, so a box name cannot move the cursor, clear the
 * screen or forge a second line.
 */
import { cleanText } from './escape.js';
import { NotifyError, safeCause } from './errors.js';
import { failureLines, formatTime, headline, itemLine, testText } from './format.js';
import type { NotificationMessage, Notifier } from './types.js';

/**
 * The lines of one message. Pure. Each starts with the message time:
 * `2026-01-01 00:02:00 UTC FIRING critical box-offline: box SN-0042 "Lobby" (Hall A) disconnected; since ...`.
 */
export function buildConsoleLines(message: NotificationMessage, notifier: string): string[] {
  const at = formatTime(message.createdAt);
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
}

export class ConsoleNotifier implements Notifier {
  readonly name: string;
  readonly type = 'console' as const;
  private readonly stream: LineSink;

  constructor(options: ConsoleNotifierOptions) {
    this.name = options.name;
    this.stream = options.stream ?? process.stdout;
  }

  async send(message: NotificationMessage): Promise<void> {
    const text = buildConsoleLines(message, this.name)
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
