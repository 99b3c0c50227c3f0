/**
 * NotifyError: why a delivery failed, whether trying again may help, and nothing secret.
 *
 * Library errors (nodemailer, @slack/webhook, fetch) carry the SMTP URL, credentials or webhook URL
 * in fields such as `config`, `url`, `auth` or `original`. They are never attached as they are: the
 * cause chain is rebuilt from names, codes and messages only, with every known secret replaced by
 * `[redacted]`.
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

const REDACTED = '[redacted]';

/**
 * Replaces every occurrence of the given secrets (and their URL-encoded and decoded forms) in
 * `text`. Secrets shorter than 4 characters are ignored (they would mangle ordinary words).
 */
export function redact(text: string, secrets: readonly string[]): string {
  const variants = new Set<string>();
  for (const s of secrets) {
    if (s.length < 4) continue;
    variants.add(s);
    variants.add(encodeURIComponent(s));
    try {
      variants.add(decodeURIComponent(s));
    } catch {
      // not URL-encoded
    }
  }
  // Longest first, so that a URL is replaced as a whole before its parts.
  let out = text;
  for (const v of [...variants].filter((v) => v.length >= 4).sort((a, b) => b.length - a.length)) {
    out = out.split(v).join(REDACTED);
  }
  return out;
}

/** The secrets contained in a URL: the whole URL, its password, user:password, path, query, long path segments and query values. */
export function urlSecrets(url: string): string[] {
  const secrets = [url];
  try {
    const u = new URL(url);
    if (u.password) secrets.push(u.password, `${u.username}:${u.password}`);
    if (u.pathname.length > 1) secrets.push(u.pathname + u.search);
    if (u.search.length > 1) secrets.push(u.search);
    for (const segment of u.pathname.split('/')) if (segment.length >= 8) secrets.push(segment);
    for (const value of u.searchParams.values()) if (value.length >= 8) secrets.push(value);
  } catch {
    // not a URL: the whole text is the secret
  }
  return secrets;
}

/** A plain error with the same name, code and message (redacted): no other fields survive. */
class SafeCause extends Error {
  readonly code: string | undefined;
  constructor(name: string, message: string, code: string | undefined, cause: SafeCause | undefined) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = name;
    this.code = code;
  }
}

/**
 * Rebuilds an error's cause chain (up to 4 levels) from names, messages and string codes only,
 * redacting the secrets. Use it as the `cause` of a NotifyError instead of the library's error.
 */
export function safeCause(err: unknown, secrets: readonly string[], depth = 0): SafeCause | undefined {
  if (err === undefined || err === null || depth > 3) return undefined;
  if (!(err instanceof Error)) return new SafeCause('Error', redact(String(err), secrets), undefined, undefined);
  const code = (err as { code?: unknown }).code;
  return new SafeCause(
    err.name,
    redact(err.message, secrets),
    typeof code === 'string' ? code : undefined,
    safeCause(err.cause, secrets, depth + 1),
  );
}

/** Whether an error (or one of its causes) is an abort or a timeout from an AbortSignal. */
export function abortKind(err: unknown): 'timeout' | 'abort' | undefined {
  for (let e: unknown = err, i = 0; e instanceof Error && i < 5; e = e.cause, i++) {
    if (e.name === 'TimeoutError') return 'timeout';
    if (e.name === 'AbortError') return 'abort';
  }
  return undefined;
}
