/**
 * Structured logs with pino: JSON lines by default, a human-readable form on a terminal or with
 * `--log-format pretty`. Secrets never reach a log call, and the redact list is a second guard.
 */
import { pino, type Logger } from 'pino';

export type { Logger };
export type LogFormat = 'json' | 'pretty';

export interface LoggerOptions {
  level?: string;
  format?: LogFormat;
  /** Where JSON lines go; defaults to stdout. */
  destination?: NodeJS.WritableStream;
  /** Colours in the pretty format (default true; false when piped or with NO_COLOR). */
  colour?: boolean;
}

export const REDACT_PATHS = [
  'secret_key',
  '*.secret_key',
  'secretKey',
  '*.secretKey',
  'webhook_url',
  '*.webhook_url',
  'smtp_url',
  '*.smtp_url',
  'headers["account-secret-key"]',
  '*.headers["account-secret-key"]',
];

export function createLogger(options: LoggerOptions = {}): Logger {
  const base = { level: options.level ?? 'info', redact: { paths: REDACT_PATHS, censor: '[redacted]' } };
  if (options.format === 'pretty') {
    return pino({
      ...base,
      transport: { target: 'pino-pretty', options: { colorize: options.colour ?? true, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname' } },
    });
  }
  return options.destination ? pino(base, options.destination) : pino(base);
}

/** A logger that drops everything (tests, quiet commands). */
export const silentLogger: Logger = pino({ level: 'silent' });
