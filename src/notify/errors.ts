/**
 * NotifyError: why a delivery failed, whether trying again may help, and nothing secret.
 *
 * Library errors (nodemailer, undici) carry the SMTP URL, credentials or webhook URL
 * in fields such as `config`, `url`, `auth` or `original`. They are never attached as they are:
 * `safeCause` (src/redact.ts) rebuilds the cause chain with every known secret redacted.
 */
import { BoxwatchError } from '../errors.js';

export type NotifyErrorCode =
  | 'notify_unreachable' // no connection (refused, DNS, reset)
  | 'notify_timeout'
  | 'notify_server_error' // HTTP 5xx, SMTP 4xx (transient)
  | 'notify_rate_limited' // HTTP 429
  | 'notify_rejected' // HTTP 4xx, SMTP 5xx: permanent for this message
  | 'notify_auth' // SMTP authentication failed
  | 'notify_config' // invalid URL or options
  | 'notify_aborted'
  | 'notify_failed'; // anything else

export interface NotifyErrorOptions {
  retryable: boolean;
  cause?: unknown;
  /** HTTP status or SMTP reply code, when there was one. */
  status?: number;
  /** From a Retry-After header (HTTP 429/503). */
  retryAfterMs?: number;
}

export class NotifyError extends BoxwatchError {
  /** The notifier's configured name (`ops-slack`). */
  readonly notifier: string;
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(code: NotifyErrorCode, notifier: string, message: string, options: NotifyErrorOptions) {
    super(code, `notifier "${notifier}": ${message}`, { cause: options.cause, retryable: options.retryable });
    this.notifier = notifier;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** Whether an error (or one of its causes) is an abort or a timeout from an AbortSignal. */
export function abortKind(err: unknown): 'timeout' | 'abort' | undefined {
  for (let e: unknown = err, i = 0; e instanceof Error && i < 5; e = e.cause, i++) {
    if (e.name === 'TimeoutError') return 'timeout';
    if (e.name === 'AbortError') return 'abort';
  }
  return undefined;
}
