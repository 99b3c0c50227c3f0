/**
 * One JSON POST for every webhook-style channel (Slack, Teams, webhook, Alertmanager, PagerDuty,
 * ntfy, Telegram) on undici: a per-send timeout joined with the dispatcher's signal, no redirect
 * followed, the answer read up to MAX_ANSWER_BYTES, the Retry-After header, and every failure
 * turned into a NotifyError that says whether trying again may help and never carries a secret
 * (URLs with tokens, routing keys, HMAC secrets: the caller lists them).
 *
 * Classification (the same for every service): 2xx delivered; 429 rate limited and 5xx server
 * errors are retried (after Retry-After when given); 408 is a timeout (retried); a redirect is
 * refused like a failed request (retried); any other status is a permanent rejection of this
 * message (dead at once, not retried).
 */
import { request } from 'undici';
import { abortWith } from '../abort.js';
import { parseRetryAfter } from '../retry-after.js';
import { cleanText } from './escape.js';
import { NotifyError, abortKind } from './errors.js';
import { truncate } from '../text.js';
import { redact, safeCause } from '../redact.js';
import { systemClock } from '../clock.js';

/** The most of an answer read: only its start is shown in errors; the rest is not waited for. */
export const MAX_ANSWER_BYTES = 64 * 1024;

/** undici's own deadlines, reported like the send's timeout. */
const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

export interface HttpChannel {
  /** The notifier's name (for errors). */
  notifier: string;
  /** The service as people name it (`PagerDuty`, `the webhook`): `PagerDuty answered HTTP 500`. */
  service: string;
  /** Every secret that could appear in a URL, a header or an answer; redacted from errors. */
  secrets: readonly string[];
  /** How errors name the service when no answer came (default `service`). */
  unreachable?: string;
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
  const service = channel.unreachable ?? channel.service;
  const code = (err as { code?: unknown } | null)?.code;
  const kind = typeof code === 'string' && TIMEOUT_CODES.has(code) ? 'timeout' : abortKind(err);
  if (kind === 'timeout') return new NotifyError('notify_timeout', channel.notifier, `${service} timed out`, { retryable: true, cause });
  if (kind === 'abort') return new NotifyError('notify_aborted', channel.notifier, `sending to ${service} was aborted`, { retryable: true, cause });
  // No response: the innermost cause says why (`connect ECONNREFUSED 127.0.0.1:9`).
  let inner: Error | undefined = cause;
  while (inner?.cause instanceof Error) inner = inner.cause;
  return new NotifyError('notify_unreachable', channel.notifier, `cannot reach ${service}: ${inner?.message ?? 'request failed'}`, {
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
  // As fetch does: credentials in a URL are refused, not dropped (Alertmanager turns its own into a header); the URL is not quoted.
  if (hasCredentials(url)) throw transportError(channel, new TypeError('Request cannot be constructed from a URL that includes credentials'));
  const timeoutMs = channel.timeoutMs ?? 10_000;
  const send = new AbortController();
  const unlinkDeadline = abortWith(AbortSignal.timeout(timeoutMs), send);
  const unlinkCaller = abortWith(options.signal, send);
  let status: number;
  let retryAfter: string | string[] | undefined;
  let text: string;
  try {
    const res = await request(url, { method: 'POST', body, headers, signal: send.signal, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    status = res.statusCode;
    retryAfter = res.headers['retry-after'];
    text = await readAnswer(res.body);
  } catch (err) {
    throw transportError(channel, err);
  } finally {
    unlinkDeadline();
    unlinkCaller();
  }
  // A webhook URL that redirects is misconfigured or hijacked: its body is not sent on.
  if (status >= 300 && status < 400) throw transportError(channel, new Error(`unexpected redirect (HTTP ${status})`));
  if (status >= 200 && status < 300) return { status, text };
  const now = options.now ?? systemClock.now;
  const retryAfterMs = parseRetryAfter(retryAfter, now()) ?? options.retryAfterFromBody?.(text);
  throw statusError(channel, status, text, retryAfterMs);
}

function hasCredentials(url: string): boolean {
  try {
    const { username, password } = new URL(url);
    return username !== '' || password !== '';
  } catch {
    return false; // undici refuses it, as an unreachable service
  }
}

/** The start of an answer, at most MAX_ANSWER_BYTES: a longer one is cut off (its connection closed). */
async function readAnswer(body: AsyncIterable<Buffer> & { destroy(): unknown }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= MAX_ANSWER_BYTES) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks, size).subarray(0, MAX_ANSWER_BYTES).toString('utf8');
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
