/**
 * A real HTTP receiver for the webhook-style channels (node:http on 127.0.0.1). It records every
 * request (method, path, headers, raw body and the body parsed as JSON), answers POSTs to its path
 * with the configured success answer, and can answer a chosen status (500, 429 with Retry-After,
 * 400) for a number of requests or until reset, delay its answers, or be stopped and started again
 * on the same port. test/helpers/slack-receiver.ts is this receiver with Slack's answers.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The body as sent. */
  raw: string;
  /** The body parsed as JSON (the raw text when it is not JSON). */
  body: unknown;
}

export interface ReceiverResponse {
  status: number;
  body?: string;
  headers?: Record<string, string>;
}

export interface HttpReceiver {
  readonly port: number;
  /** The URL of the receiver's path. */
  readonly url: string;
  /** Successfully answered (2xx) requests, in order. */
  readonly received: ReceivedWebhook[];
  /** Every request, including those answered with an error status. */
  readonly requests: ReceivedWebhook[];
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedWebhook[]>;
  /** Answers `times` requests (default: all until `reset()`) with this response, after `after` (default 0) answered normally. */
  respondWith(response: ReceiverResponse, times?: number, after?: number): void;
  /** Waits this long before answering (until `reset()`). */
  delay(ms: number): void;
  reset(): void;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export interface HttpReceiverOptions {
  port?: number;
  /** POSTs to this path are accepted (default any path). */
  path?: string;
  /** The answer to an accepted POST (default 200 `ok`). */
  ok?: ReceiverResponse;
  /** The answer to anything else (default 404). */
  notFound?: ReceiverResponse;
  /** Name in error messages. */
  name?: string;
}

export async function startHttpReceiver(options: HttpReceiverOptions = {}): Promise<HttpReceiver> {
  const received: ReceivedWebhook[] = [];
  const requests: ReceivedWebhook[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  let override: { response: ReceiverResponse; remaining: number; skip: number } | undefined;
  let delayMs = 0;
  let server: Server | undefined;
  let port = options.port ?? 0;
  const timers = new Set<NodeJS.Timeout>();

  const notify = (): void => {
    for (const w of [...waiters]) {
      if (received.length >= w.count) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // keep the raw text
      }
      const record: ReceivedWebhook = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, raw: text, body };
      requests.push(record);
      let response: ReceiverResponse = options.ok ?? { status: 200, body: 'ok' };
      if (req.method !== 'POST' || (options.path !== undefined && req.url !== options.path)) response = options.notFound ?? { status: 404, body: 'not found' };
      else if (override && override.skip > 0) override.skip -= 1;
      else if (override) {
        response = override.response;
        override.remaining -= 1;
        if (override.remaining <= 0) override = undefined;
      }
      const answer = (): void => {
        if (res.destroyed) return;
        res.writeHead(response.status, { 'content-type': response.body?.startsWith('{') ? 'application/json' : 'text/plain', ...response.headers });
        res.end(response.body ?? '');
        if (response.status >= 200 && response.status < 300) {
          received.push(record);
          notify();
        }
      };
      if (delayMs > 0) {
        const timer = setTimeout(() => {
          timers.delete(timer);
          answer();
        }, delayMs);
        timers.add(timer);
      } else answer();
    });
  };

  const start = async (): Promise<void> => {
    const s = createServer(handler);
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        s.off('error', reject);
        resolve();
      });
    });
    port = (s.address() as AddressInfo).port;
    server = s;
  };

  const stop = async (): Promise<void> => {
    const s = server;
    server = undefined;
    for (const t of timers) clearTimeout(t);
    timers.clear();
    if (!s) return;
    await new Promise<void>((resolve) => {
      s.close(() => resolve());
      s.closeAllConnections();
    });
  };

  await start();

  return {
    get port() {
      return port;
    },
    get url() {
      return `http://127.0.0.1:${port}${options.path ?? '/'}`;
    },
    received,
    requests,
    waitFor(count, timeoutMs = 5_000) {
      if (received.length >= count) return Promise.resolve(received.slice());
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1);
          reject(new Error(`${options.name ?? 'HTTP'} receiver: expected ${count} messages, got ${received.length} within ${timeoutMs} ms`));
        }, timeoutMs);
        const waiter = {
          count,
          resolve: () => {
            clearTimeout(timer);
            resolve(received.slice());
          },
        };
        waiters.push(waiter);
      });
    },
    respondWith(response, times = Number.POSITIVE_INFINITY, after = 0) {
      override = { response, remaining: times, skip: after };
    },
    delay(ms) {
      delayMs = ms;
    },
    reset() {
      override = undefined;
      delayMs = 0;
    },
    stop,
    start,
    close: stop,
  };
}
