/**
 * A real HTTP receiver for Slack incoming webhooks (node:http on 127.0.0.1). It records the JSON
 * body of every POST, answers `ok` like Slack, and can answer a chosen status (500, 429 with
 * Retry-After, 404 `no_service`) for a number of requests or until reset, delay its answers, or be
 * stopped and started again on the same port.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

export interface SlackResponse {
  status: number;
  body?: string;
  headers?: Record<string, string>;
}

export interface SlackReceiver {
  readonly port: number;
  /** A webhook URL of this receiver; the path looks like Slack's secret path. */
  readonly url: string;
  /** Successfully answered (2xx) requests, in order. */
  readonly received: ReceivedWebhook[];
  /** Every request, including those answered with an error status. */
  readonly requests: ReceivedWebhook[];
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedWebhook[]>;
  /** Answers the next `times` requests (default: all until `reset()`) with this response. */
  respondWith(response: SlackResponse, times?: number): void;
  /** Waits this long before answering (until `reset()`). */
  delay(ms: number): void;
  reset(): void;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export const SLACK_TEST_PATH = '/services/T0000TEST/B0000TEST/s3cr3tW3bh00kT0k3n';

export async function startSlackReceiver(options: { port?: number } = {}): Promise<SlackReceiver> {
  const received: ReceivedWebhook[] = [];
  const requests: ReceivedWebhook[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  let override: { response: SlackResponse; remaining: number } | undefined;
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
      const record: ReceivedWebhook = { path: req.url ?? '', headers: req.headers, body };
      requests.push(record);
      let response: SlackResponse = { status: 200, body: 'ok' };
      if (req.method !== 'POST' || req.url !== SLACK_TEST_PATH) response = { status: 404, body: 'no_service' };
      else if (override) {
        response = override.response;
        override.remaining -= 1;
        if (override.remaining <= 0) override = undefined;
      }
      const answer = (): void => {
        if (res.destroyed) return;
        res.writeHead(response.status, { 'content-type': 'text/plain', ...response.headers });
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
      return `http://127.0.0.1:${port}${SLACK_TEST_PATH}`;
    },
    received,
    requests,
    waitFor(count, timeoutMs = 5_000) {
      if (received.length >= count) return Promise.resolve(received.slice());
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1);
          reject(new Error(`Slack receiver: expected ${count} messages, got ${received.length} within ${timeoutMs} ms`));
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
    respondWith(response, times = Number.POSITIVE_INFINITY) {
      override = { response, remaining: times };
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
