/**
 * Downloading one recording over HTTP(S) on undici: no account key is sent (a recording URL
 * carries its own access), a redirect is followed only to the URL's own host or a host of
 * `archive.allow_hosts`, the size is bounded, the answer's headers and each pause in its body must
 * come within `timeoutMs`, and the body passes the shared bandwidth throttle as it is read. A
 * redirect's or an error answer's body is not read (it could trickle for ever): its connection is
 * closed; so is the recording's when the caller lets it go (`close`) before its end.
 * Failures are DownloadErrors with a code: `gone` (404/410: the URL may have expired),
 * `redirect_refused`, `too_large`, `http_<status>`, `bad_url`, `network`. URLs are never put in
 * errors or logs (their query string is a credential): only their host.
 */
import { Agent, type Dispatcher } from 'undici';
import { BoxwatchError, errorMessage } from '../errors.js';
import type { Throttle } from './throttle.js';

export class DownloadError extends BoxwatchError {}

/**
 * The archive's connections: at most `connections` open to each recording host, idle ones kept
 * 4 s (or the host's Keep-Alive hint less a second); a connection must be made within `connectTimeoutMs`.
 */
export function downloadAgent(connections: number, connectTimeoutMs?: number): Agent {
  return new Agent({ connections, keepAliveTimeout: 4_000, keepAliveTimeoutThreshold: 1_000, ...(connectTimeoutMs !== undefined && { connect: { timeout: connectTimeoutMs } }) });
}

export interface DownloadOptions {
  agent: Dispatcher;
  /** Hosts (`name` or `name:port`) a redirect may lead to besides the URL's own host. */
  allowHosts: readonly string[];
  maxBytes: number;
  /** For the answer's headers, and for each pause in its body. */
  timeoutMs: number;
  throttle: Throttle;
  signal?: AbortSignal;
}

export interface OpenRecording {
  /** Where the body came from after redirects. */
  url: URL;
  contentType: string | undefined;
  body: AsyncIterable<Uint8Array>;
  /**
   * Lets the answer go: its connection is closed unless the body was read to its end. To be
   * called in a `finally` whatever happened: a body never read (the archive's file could not be
   * created) would otherwise hold its connection, and so a place of the host's `connections`,
   * for ever.
   */
  close(): void;
}

const MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** True when a redirect from `origin` may go to `target`. */
export function redirectAllowed(origin: URL, target: URL, allowHosts: readonly string[]): boolean {
  if (target.host === origin.host) return true;
  const host = target.host.toLowerCase();
  const name = target.hostname.toLowerCase();
  return allowHosts.some((h) => h === host || h === name);
}

/** Requests the recording and follows allowed redirects; the body is to be read once by the caller. */
export async function openRecording(address: string, options: DownloadOptions): Promise<OpenRecording> {
  const origin = parseUrl(address);
  let url = origin;
  for (let hop = 0; ; hop++) {
    const res = await get(url, options);
    const status = res.statusCode;
    if (REDIRECTS.has(status)) {
      discard(res.body); // an answer's body is not read (it could trickle for ever): its connection is closed
      const location = header(res.headers, 'location');
      if (location === undefined) throw new DownloadError(`http_${status}`, `${url.host} answered ${status} without a Location`, { retryable: true });
      if (hop >= MAX_REDIRECTS) throw new DownloadError('redirect_refused', `more than ${MAX_REDIRECTS} redirects from ${origin.host}`);
      const target = parseUrl(location, url);
      if (!redirectAllowed(origin, target, options.allowHosts)) {
        throw new DownloadError('redirect_refused', `a redirect from ${origin.host} to ${target.host} was refused (not in archive.allow_hosts)`);
      }
      url = target;
      continue;
    }
    if (status < 200 || status > 299) {
      discard(res.body); // as a redirect's
      if (status === 404 || status === 410) throw new DownloadError('gone', `${url.host} answered ${status}: the recording is not there (it may have expired)`);
      throw new DownloadError(`http_${status}`, `${url.host} answered ${status}`, { retryable: true });
    }
    const length = Number(header(res.headers, 'content-length'));
    if (Number.isFinite(length) && length > options.maxBytes) {
      discard(res.body);
      throw new DownloadError('too_large', `the recording is ${length} bytes, more than archive.max_size (${options.maxBytes})`);
    }
    const close = (): void => {
      discard(res.body);
    };
    return { url, contentType: header(res.headers, 'content-type'), body: bounded(res, url, options), close };
  }
}

/** GETs `url`: resolves with the answer once its headers came, within `timeoutMs`. */
async function get(url: URL, options: DownloadOptions): Promise<Dispatcher.ResponseData> {
  options.signal?.throwIfAborted();
  try {
    return await options.agent.request({
      origin: url.origin,
      path: url.pathname + url.search,
      method: 'GET',
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      ...(options.signal && { signal: options.signal }),
    });
  } catch (err) {
    if (options.signal?.aborted === true) throw options.signal.reason;
    throw networkError(url, err);
  }
}

/** The body, bounded in size and paced by the throttle; a read error becomes a `network` DownloadError. */
async function* bounded(res: Dispatcher.ResponseData, url: URL, options: DownloadOptions): AsyncGenerator<Uint8Array> {
  let total = 0;
  const iterator = (res.body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  try {
    for (;;) {
      let next: IteratorResult<Buffer>;
      try {
        next = await iterator.next();
      } catch (err) {
        if (options.signal?.aborted === true) throw options.signal.reason;
        throw networkError(url, err);
      }
      if (next.done === true) return;
      total += next.value.length;
      if (total > options.maxBytes) throw new DownloadError('too_large', `the recording is larger than archive.max_size (${options.maxBytes} bytes)`);
      await options.throttle.take(next.value.length, options.signal);
      yield next.value;
    }
  } finally {
    discard(res.body);
  }
}

/** undici's deadlines, named by what did not come in time. */
const TIMEOUT_NAMES: Readonly<Record<string, string>> = { UND_ERR_HEADERS_TIMEOUT: 'HEADERS_TIMEOUT', UND_ERR_BODY_TIMEOUT: 'BODY_TIMEOUT' };

/** Lets a body go unread: its connection is closed (undici reports that as an error nobody needs). */
function discard(body: Dispatcher.ResponseData['body']): void {
  if (body.destroyed) return;
  body.on('error', () => undefined);
  body.destroy();
}

function parseUrl(text: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(text, base);
  } catch {
    throw new DownloadError('bad_url', 'the recording URL is not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new DownloadError('bad_url', `the recording URL is not http(s) (${url.protocol})`);
  return url;
}

function networkError(url: URL, err: unknown): DownloadError {
  const raw = (err as { code?: unknown } | null)?.code;
  // A request undici refuses to make is not helped by trying again.
  const retryable = raw !== 'UND_ERR_INVALID_ARG';
  const code = typeof raw === 'string' ? (TIMEOUT_NAMES[raw] ?? raw) : raw;
  // The low-level message may quote the URL: only its code and the host are kept.
  const detail = typeof code === 'string' ? code : errorMessage(err).replaceAll(url.href, url.host);
  return new DownloadError('network', `downloading from ${url.host} failed: ${detail}`, { retryable });
}

function header(headers: Dispatcher.ResponseData['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}
