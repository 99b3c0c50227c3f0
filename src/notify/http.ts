/**
 * One HTTP POST for the HTTP channels (webhook, Alertmanager, PagerDuty, Teams, ntfy, Telegram):
 * a per-send timeout joined with the dispatcher's signal, the Retry-After header, and every
 * failure turned into a NotifyError that says whether trying again may help and never carries a
 * secret (URLs with tokens, routing keys, HMAC secrets: the caller lists them).
 *
 * Classification (the same for every service): 2xx delivered; 429 rate limited and 5xx server
 * errors are retried (after Retry-After when given); 408 is a timeout (retried); any other status
 * is a permanent rejection of this message (dead at once, not retried).
 */
import { parseRetryAfter } from '../retry-after.js';
import { cleanText, truncate } from './escape.js';
import { NotifyError, abortKind, redact, safeCause } from './errors.js';

export interface HttpChannel {
  /** The notifier's name (for errors). */
  notifier: string;
  /** The service as people name it (`PagerDuty`, `the webhook`): `PagerDuty answered HTTP 500`. */
  service: string;
  /** Every secret that could appear in a URL, a header or an answer; redacted from errors. */
  secrets: readonly string[];
  /** Request timeout in ms (default 10 s). */
  timeoutMs?: number;
}

export interface HttpAnswer {
  status: number;
  text: string;
}

/** The NotifyError for a non-2xx answer. `retryAfterMs` from a header or the service's body. */
export function statusError(channel: HttpChannel, status: number, body: string, retryAfterMs?: number): NotifyError {
  const shown = truncate(redact(cleanText(body).trim(), channel.secrets), 200);
  const detail = `${channel.service} answered HTTP ${status}${shown ? `: ${shown}` : ''}`;
  const name = channel.notifier;
  if (status === 429) return new NotifyError('notify_rate_limited', name, detail, { retryable: true, status, retryAfterMs });
  if (status === 408) return new NotifyError('notify_timeout', name, detail, { retryable: true, status });
  if (status >= 500) return new NotifyError('notify_server_error', name, detail, { retryable: true, status, retryAfterMs });
  return new NotifyError('notify_rejected', name, detail, { retryable: false, status });
}

/** The NotifyError for a request that got no answer (refused, timed out, aborted). */
export function transportError(channel: HttpChannel, err: unknown): NotifyError {
  const cause = safeCause(err, channel.secrets);
  const kind = abortKind(err);
  if (kind === 'timeout') return new NotifyError('notify_timeout', channel.notifier, `${channel.service} timed out`, { retryable: true, cause });
  if (kind === 'abort') return new NotifyError('notify_aborted', channel.notifier, `sending to ${channel.service} was aborted`, { retryable: true, cause });
  // No response: the innermost cause says why (`connect ECONNREFUSED 127.0.0.1:9`).
  let inner: Error | undefined = cause;
  while (inner?.cause instanceof Error) inner = inner.cause;
  return new NotifyError('notify_unreachable', channel.notifier, `cannot reach ${channel.service}: ${inner?.message ?? 'request failed'}`, {
    retryable: true,
    cause,
  });
}

/**
 * POSTs `body` to `url`. Resolves with the answer when it is 2xx; rejects with a NotifyError
 * otherwise. `retryAfterFromBody` lets a service that puts the delay in its JSON (Telegram) say so.
 */
export async function post(
  channel: HttpChannel,
  url: string,
  body: string,
  headers: Record<string, string>,
  options: { signal?: AbortSignal; now?: () => number; retryAfterFromBody?: (text: string) => number | undefined } = {},
): Promise<HttpAnswer> {
  const signals = [AbortSignal.timeout(channel.timeoutMs ?? 10_000), ...(options.signal ? [options.signal] : [])];
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, { method: 'POST', body, headers, signal: AbortSignal.any(signals), redirect: 'error' });
    text = await response.text();
  } catch (err) {
    throw transportError(channel, err);
  }
  if (response.ok) return { status: response.status, text };
  const now = options.now ?? Date.now;
  const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'), now()) ?? options.retryAfterFromBody?.(text);
  throw statusError(channel, response.status, text, retryAfterMs);
}

/** Throws a notify_config NotifyError unless `url` is an http(s) URL; never echoes the URL. */
export function assertHttpUrl(notifier: string, field: string, url: string): void {
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    throw new NotifyError('notify_config', notifier, `${field} is not a valid URL`, { retryable: false });
  }
  if (protocol !== 'https:' && protocol !== 'http:') {
    throw new NotifyError('notify_config', notifier, `${field} must be an http:// or https:// URL`, { retryable: false });
  }
}
