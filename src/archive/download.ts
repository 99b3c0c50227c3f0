/**
 * Downloading one recording over HTTP(S) (Node's client, src/http-client.ts): no account key is
 * sent (a recording URL carries its own access), a redirect is followed only to the URL's own host
 * or a host of `archive.allow_hosts`, the size is bounded, the answer's headers and each pause in
 * its body must come within `timeoutMs`, and the body passes the shared bandwidth throttle as it
 * is read. A redirect's or an error answer's body is not read (it could trickle for ever): its
 * connection is closed; so is the recording's when the caller lets it go (`close`) before its end.
 * Failures are DownloadErrors with a code: `gone` (404/410: the URL may have expired),
 * `redirect_refused`, `too_large`, `http_<status>`, `bad_url`, `network`. URLs are never put in
 * errors or logs (their query string is a credential): only their host.
 */
import type { Agent, ClientRequest, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { BoxwatchError, errorMessage } from '../errors.js';
import { guardRequest, keepAliveAgent, requestTarget, startRequest, type RequestTarget } from '../http-client.js';
import type { Throttle } from './throttle.js';

export class DownloadError extends BoxwatchError {}

/** A keep-alive agent per protocol (a redirect may lead from http to https). */
export type DownloadAgents = Readonly<Record<RequestTarget['protocol'], Agent>>;

/** The agents of the archive: at most `connections` open to each recording host. */
export function downloadAgents(connections: number): DownloadAgents {
  return { 'http:': keepAliveAgent('http:', connections), 'https:': keepAliveAgent('https:', connections) };
}

export interface DownloadOptions {
  agents: DownloadAgents;
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
    const status = res.statusCode ?? 0;
    if (REDIRECTS.has(status)) {
      res.destroy(); // an answer's body is not read (it could trickle for ever): its connection is closed
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
      res.destroy(); // as a redirect's
      if (status === 404 || status === 410) throw new DownloadError('gone', `${url.host} answered ${status}: the recording is not there (it may have expired)`);
      throw new DownloadError(`http_${status}`, `${url.host} answered ${status}`, { retryable: true });
    }
    const length = Number(header(res.headers, 'content-length'));
    if (Number.isFinite(length) && length > options.maxBytes) {
      res.destroy();
      throw new DownloadError('too_large', `the recording is ${length} bytes, more than archive.max_size (${options.maxBytes})`);
    }
    const close = (): void => {
      if (!res.destroyed) res.destroy();
    };
    return { url, contentType: header(res.headers, 'content-type'), body: bounded(res, url, options), close };
  }
}

/** GETs `url`: resolves with the answer once its headers came, within `timeoutMs`. */
function get(url: URL, options: DownloadOptions): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    options.signal?.throwIfAborted();
    const target = requestTarget(url);
    let req: ClientRequest;
    try {
      req = startRequest(target, { agent: options.agents[target.protocol], method: 'GET', path: url.pathname + url.search, headers: {} });
    } catch (err) {
      // Node refused to start it (a TypeError such as ERR_INVALID_PROTOCOL: an agent of the other
      // protocol): nothing was sent, and trying again cannot help. A DownloadError like any other.
      reject(networkError(url, err, false));
      return;
    }
    const guard = guardRequest(req, {
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      timeoutError: () => networkError(url, timeoutError('headers')),
      requestError: (err) => networkError(url, err),
      onFail: reject,
    });
    req.on('response', (res: IncomingMessage) => {
      guard.release();
      resolve(res);
    });
  });
}

/** The body, bounded in size and paced by the throttle; a read error becomes a `network` DownloadError. */
async function* bounded(res: IncomingMessage, url: URL, options: DownloadOptions): AsyncGenerator<Uint8Array> {
  let total = 0;
  const iterator = res[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  try {
    for (;;) {
      let next: IteratorResult<Buffer>;
      try {
        next = await nextChunk(iterator, res, options);
      } catch (err) {
        if (options.signal?.aborted) throw options.signal.reason;
        throw networkError(url, err);
      }
      if (next.done === true) return;
      total += next.value.length;
      if (total > options.maxBytes) throw new DownloadError('too_large', `the recording is larger than archive.max_size (${options.maxBytes} bytes)`);
      await options.throttle.take(next.value.length, options.signal);
      yield next.value;
    }
  } finally {
    if (!res.destroyed) res.destroy();
  }
}

/** The next chunk of the body: cut when it does not come within `timeoutMs`, or on an abort. */
async function nextChunk(iterator: AsyncIterator<Buffer>, res: IncomingMessage, options: DownloadOptions): Promise<IteratorResult<Buffer>> {
  const cut = (err: unknown): void => void res.destroy(err instanceof Error ? err : new Error(String(err)));
  const timer = setTimeout(() => cut(timeoutError('body')), options.timeoutMs);
  const onAbort = (): void => cut(options.signal?.reason);
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await iterator.next();
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
  }
}

/** No headers, or no more of the body, within the timeout (its code names which). */
function timeoutError(phase: 'headers' | 'body'): Error {
  return Object.assign(new Error(`no ${phase} within the timeout`), { code: phase === 'headers' ? 'HEADERS_TIMEOUT' : 'BODY_TIMEOUT' });
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

function networkError(url: URL, err: unknown, retryable = true): DownloadError {
  const code = (err as { code?: unknown } | null)?.code;
  // The low-level message may quote the URL: only its code and the host are kept.
  const detail = typeof code === 'string' ? code : errorMessage(err).replaceAll(url.href, url.host);
  return new DownloadError('network', `downloading from ${url.host} failed: ${detail}`, { retryable });
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}
