/**
 * Outgoing HTTP(S) on Node's own client (node:http, node:https): the keep-alive Agent and the
 * start of one request, and its guard (a timer, the caller's abort, the request's error: the first
 * of them fails it), shared by the gateway client (src/gateway/client.ts) and the recording
 * archive (src/archive/download.ts). Reading the body is the callers'.
 */
import http, { type ClientRequest, type OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';

/** Where a request goes: the URL's protocol, host (no IPv6 brackets) and port. */
export interface RequestTarget {
  protocol: 'http:' | 'https:';
  hostname: string;
  port: string;
}

/** The target of an http(s) URL (the caller has checked the protocol). */
export function requestTarget(url: URL): RequestTarget {
  return {
    protocol: url.protocol === 'https:' ? 'https:' : 'http:',
    hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port,
  };
}

/**
 * How long an idle kept-alive socket is kept at most (undici's default): a server or load
 * balancer seldom closes one sooner, so a request is seldom written on a socket being closed.
 */
const IDLE_SOCKET_MS = 4_000;

/**
 * A keep-alive Agent: at most `maxSockets` connections open at once to each host, idle ones kept
 * for the next request for IDLE_SOCKET_MS, or a second less than the server's announced
 * `Keep-Alive: timeout=N` when that is shorter (N = 1: not kept). Node's Agent does both given its
 * `timeout` (without one it ignores the server's hint): an idle socket whose time is up is
 * destroyed; on a socket in use the timer only emits `timeout`, which no caller listens to (their
 * own timers cut a request).
 */
export function keepAliveAgent(protocol: RequestTarget['protocol'], maxSockets: number): http.Agent {
  const options = { keepAlive: true, maxSockets, maxFreeSockets: maxSockets, timeout: IDLE_SOCKET_MS };
  return protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
}

export interface RequestInit {
  agent: http.Agent;
  method: 'GET' | 'POST';
  /** Path and query. */
  path: string;
  headers: OutgoingHttpHeaders;
  body?: Buffer;
}

/**
 * Sends a request (with its body, if any) and returns it: the caller listens for `response` and
 * `error`, and cuts it with `req.destroy()` on a timeout or an abort.
 */
export function startRequest(target: RequestTarget, init: RequestInit): ClientRequest {
  // The options are named one by one, not spread from `target` and `init`: Node reads each of
  // them per request, and an object built by spreading costs more to build and to read.
  const options = { hostname: target.hostname, port: target.port, agent: init.agent, method: init.method, path: init.path, headers: init.headers };
  const req = (target.protocol === 'https:' ? https : http).request(options);
  req.end(init.body);
  return req;
}

/** Ends a guarded request's watch: `release` on success, `fail` with an error. */
export interface RequestGuard {
  /** The caller has what it waited for: the timer and the abort listener go. False if it had already failed. */
  release(): boolean;
  /** Fails the request once: the guard ends, the request is destroyed, `onFail` gets `err`. */
  fail(err: unknown): void;
}

export interface GuardOptions {
  timeoutMs: number;
  signal: AbortSignal | undefined;
  /** The error when `timeoutMs` passes first. */
  timeoutError(): unknown;
  /** The error of a failed request (refused, reset, TLS...). */
  requestError(err: unknown): unknown;
  onFail(err: unknown): void;
}

/**
 * Watches a started request until the caller releases it: the first of the timer, the caller's
 * abort (its reason) and the request's error fails it, once. One timer per request; the abort
 * is watched through the signal's one listener (watchAbort).
 */
export function guardRequest(req: ClientRequest, options: GuardOptions): RequestGuard {
  return new Guard(req, options);
}

/**
 * One request's guard. A class whose callbacks are its methods (the timer and the error listener
 * get them bound), not closures made per request: V8 keeps a method's optimized code, while the
 * code of a closure made per request is dropped once a cycle's requests are garbage and compiled
 * again the next cycle.
 */
class Guard implements RequestGuard {
  private ended = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly req: ClientRequest,
    private readonly options: GuardOptions,
  ) {
    this.timer = setTimeout(this.timedOut.bind(this), options.timeoutMs);
    if (options.signal !== undefined) watchAbort(options.signal, this);
    req.on('error', this.requestFailed.bind(this));
  }

  release(): boolean {
    if (this.ended) return false;
    this.ended = true;
    clearTimeout(this.timer);
    if (this.options.signal !== undefined) unwatchAbort(this.options.signal, this);
    return true;
  }

  fail(err: unknown): void {
    if (!this.release()) return;
    this.req.destroy();
    this.options.onFail(err);
  }

  private timedOut(): void {
    this.fail(this.options.timeoutError());
  }

  private requestFailed(err: unknown): void {
    this.fail(this.options.requestError(err));
  }
}

/** The requests under way on one signal, and the signal's one listener that fails them. */
interface AbortWatch {
  requests: Set<Guard>;
  listener: () => void;
}

const abortWatches = new WeakMap<AbortSignal, AbortWatch>();

/**
 * Fails `guard` with the signal's reason when `signal` aborts, until unwatchAbort. A poll cycle
 * passes one signal to each of its thousands of requests, 16 under way at a time: the signal gets
 * one `abort` listener, added by the first request under way and removed when none is left,
 * instead of one added and removed per request. Removed, not left: Node holds a signal made by
 * `AbortSignal.any` or `AbortSignal.timeout` for as long as it has a listener.
 */
function watchAbort(signal: AbortSignal, guard: Guard): void {
  let watch = abortWatches.get(signal);
  if (watch === undefined) {
    const requests = new Set<Guard>();
    const listener = (): void => {
      abortWatches.delete(signal);
      for (const request of requests) request.fail(signal.reason);
    };
    signal.addEventListener('abort', listener, { once: true });
    watch = { requests, listener };
    abortWatches.set(signal, watch);
  }
  watch.requests.add(guard);
}

/** The guard's request ended: it no longer watches `signal` (the last one under way removes the listener). */
function unwatchAbort(signal: AbortSignal, guard: Guard): void {
  const watch = abortWatches.get(signal);
  if (watch === undefined || !watch.requests.delete(guard)) return; // the signal aborted: its watch is gone
  if (watch.requests.size === 0) {
    abortWatches.delete(signal);
    signal.removeEventListener('abort', watch.listener);
  }
}
