/**
 * Downloading one recording over HTTP(S): no account key is sent (a recording URL carries its own
 * access), a redirect is followed only to the URL's own host or a host of `archive.allow_hosts`,
 * the size is bounded, and the body passes the shared bandwidth throttle as it is read. Failures
 * are DownloadErrors with a code: `gone` (404/410: the URL may have expired), `redirect_refused`,
 * `too_large`, `http_<status>`, `bad_url`, `network`. URLs are never put in errors or logs (their
 * query string is a credential): only their host.
 */
import { request, type Dispatcher } from 'undici';
import { BoxwatchError, errorMessage } from '../errors.js';
import type { Throttle } from './throttle.js';

export class DownloadError extends BoxwatchError {}

export interface DownloadOptions {
  dispatcher: Dispatcher;
  /** Hosts (`name` or `name:port`) a redirect may lead to besides the URL's own host. */
  allowHosts: readonly string[];
  maxBytes: number;
  timeoutMs: number;
  throttle: Throttle;
  signal?: AbortSignal;
}

export interface OpenRecording {
  /** Where the body came from after redirects. */
  url: URL;
  contentType: string | undefined;
  body: AsyncIterable<Uint8Array>;
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
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, {
        method: 'GET',
        dispatcher: options.dispatcher,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
        ...(options.signal && { signal: options.signal }),
      });
    } catch (err) {
      if (options.signal?.aborted) throw err;
      throw networkError(url, err);
    }
    const status = res.statusCode;
    if (REDIRECTS.has(status)) {
      await res.body.dump().catch(() => undefined);
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
      await res.body.dump().catch(() => undefined);
      if (status === 404 || status === 410) throw new DownloadError('gone', `${url.host} answered ${status}: the recording is not there (it may have expired)`);
      throw new DownloadError(`http_${status}`, `${url.host} answered ${status}`, { retryable: true });
    }
    const length = Number(header(res.headers, 'content-length'));
    if (Number.isFinite(length) && length > options.maxBytes) {
      res.body.destroy();
      throw new DownloadError('too_large', `the recording is ${length} bytes, more than archive.max_size (${options.maxBytes})`);
    }
    return { url, contentType: header(res.headers, 'content-type'), body: bounded(res.body, url, options) };
  }
}

/** The body, bounded in size and paced by the throttle; a read error becomes a `network` DownloadError. */
async function* bounded(body: Dispatcher.ResponseData['body'], url: URL, options: DownloadOptions): AsyncGenerator<Uint8Array> {
  let total = 0;
  const iterator = body[Symbol.asyncIterator]();
  try {
    for (;;) {
      let next: IteratorResult<Buffer>;
      try {
        next = (await iterator.next()) as IteratorResult<Buffer>;
      } catch (err) {
        if (options.signal?.aborted) throw err;
        throw networkError(url, err);
      }
      if (next.done === true) return;
      total += next.value.length;
      if (total > options.maxBytes) throw new DownloadError('too_large', `the recording is larger than archive.max_size (${options.maxBytes} bytes)`);
      await options.throttle.take(next.value.length, options.signal);
      yield next.value;
    }
  } finally {
    if (!body.destroyed) body.destroy();
  }
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
  const code = (err as { code?: unknown } | null)?.code;
  // The low-level message may quote the URL: only its code and the host are kept.
  const detail = typeof code === 'string' ? code : errorMessage(err).replaceAll(url.href, url.host);
  return new DownloadError('network', `downloading from ${url.host} failed: ${detail}`, { retryable: true });
}

function header(headers: Dispatcher.ResponseData['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}
