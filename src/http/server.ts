/**
 * The daemon's HTTP server (node:http, no framework): `/healthz`, `/metrics`, the JSON API under
 * `/api/` and, with `dashboard` options, the dashboard (dashboard.ts) under `http.base_path`.
 * Only GET and HEAD are allowed (405 with `Allow` otherwise), except the dashboard's silence
 * writes; every answer is `Cache-Control: no-store` (the dashboard's versioned assets excepted)
 * and carries the security headers below; errors are JSON without stack traces.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Awaitable } from '../awaitable.js';
import type { Clock } from '../clock.js';
import { DEFAULT_ACCOUNT } from '../box-id.js';
import { isoTime } from '../time-format.js';
import { BoxwatchError, errorMessage } from '../errors.js';
import { storeFailureCode } from '../store/errors.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { Store } from '../domain/store.js';
import { alertsJson, boxDetailJson, boxesJson, historyJson, type AlertsReader, accountParam } from './api.js';
import { dashboardRouter, type Answer, type DashboardOptions, type Handler, type Route } from './dashboard.js';
import { HttpError, badRequest, notFound } from './errors.js';
import { evaluateHealth } from './health.js';
import { listenFailure, parseListen, urlOf } from './listen.js';
import { fleetSnapshot, type FleetSnapshot } from './snapshot.js';
import { boxCallsJson, callsJson, type CallsReader } from './calls.js';

export interface HealthOptions {
  /** `/healthz` answers 503 once the last successful cycle ended longer ago than this. */
  maxCycleAgeMs: number;
  /**
   * End of the last successful cycle (ms) or null. Default: the later of what the metrics observed
   * and the last ok cycle seen in the store (from the start of the server on; so a restart followed
   * by a failure is judged by the success before the restart).
   */
  lastSuccessAt?: () => Awaitable<number | null>;
  /** Replicas: this replica's id and the accounts it leads, added to the body (docs/operations.md). */
  replica?: () => { id: string; leads: string[] };
  /**
   * The configured accounts (names of `gateways:`): only their latest cycles are listed (an account
   * removed from the configuration keeps its last cycle in the database). Default: every account.
   */
  accounts?: readonly string[];
}

export interface HttpServerOptions {
  /** `HOST:PORT`, e.g. `127.0.0.1:9464`; port 0 picks a free port. */
  listen: string;
  store: Store;
  /** The per-cycle view of the fleet the heavy answers are rendered from; default: one over `store`. */
  snapshot?: FleetSnapshot;
  metrics: Metrics;
  clock: Clock;
  health: HealthOptions;
  alerts?: AlertsReader;
  logger: Logger;
  /** Serves the dashboard (pages, assets, live events, silence writes); without it `/` is the endpoint list. */
  dashboard?: DashboardOptions;
  /** The call endpoints' data (absent: calls are off, and they answer 404). */
  calls?: CallsReader;
  /** Bounds on clients (docs/reliability.md); defaults: HTTP_LIMITS. */
  limits?: Partial<HttpLimits>;
}

/** What one HTTP client may hold: slow or endless requests are cut, connections are capped. */
export interface HttpLimits {
  /** A request whose headers are not complete by then is answered 408 and closed. */
  headersTimeoutMs: number;
  /** A request (headers and body) not complete by then is answered 408 and closed. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** Connections beyond this many are closed as they arrive (`http.max_connections`). */
  maxConnections: number;
  /** How often the server looks for requests past their timeouts. */
  checkIntervalMs: number;
}

export const HTTP_LIMITS: HttpLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 1_000,
  checkIntervalMs: 2_000,
};

export interface RunningHttpServer {
  /** `http://HOST:PORT` with the bound port, no trailing slash. */
  url: string;
  close(): Promise<void>;
}

const ALLOW = 'GET, HEAD';
const JSON_TYPE = 'application/json; charset=utf-8';
/** Connections still busy this long after close() are cut. */
const CLOSE_GRACE_MS = 1_000;

/**
 * On every answer. The dashboard has no inline script or style and is never framed; `img-src data:`
 * is for uPlot's legend markers.
 */
const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
};

const json = (status: number, value: unknown): Answer => ({
  status,
  body: `${JSON.stringify(value, null, 2)}\n`,
  type: JSON_TYPE,
});

const ENDPOINTS = ['/healthz', '/metrics', '/api/boxes', '/api/boxes/:serial', '/api/boxes/:serial/history', '/api/boxes/:serial/calls', '/api/alerts', '/api/calls'];

/** Starts listening; resolves once bound. */
export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const { store, metrics, clock, logger } = options;
  const snapshot = options.snapshot ?? fleetSnapshot(store);
  const { host, port } = parseListen(options.listen);

  /** The latest successful cycle seen in the store, remembered across later failed ones. */
  let storedOk: number | null = null;
  const storeLastOk = async (): Promise<number | null> => {
    const last = await store.lastCycle();
    if (last?.outcome === 'ok') storedOk = Math.max(storedOk ?? 0, last.startedAt + last.durationMs);
    return storedOk;
  };
  await storeLastOk();
  const lastSuccessAt =
    options.health.lastSuccessAt ??
    (async (): Promise<number | null> => {
      const seen = metrics.cycleStatus().lastOkAt;
      const stored = await storeLastOk();
      return seen === null ? stored : stored === null ? seen : Math.max(seen, stored);
    });

  const health: Handler = async () => {
    const { healthy, body } = evaluateHealth({
      now: clock.now(),
      maxCycleAgeMs: options.health.maxCycleAgeMs,
      lastCycle: await store.lastCycle(),
      lastSuccessAt: await lastSuccessAt(),
      failingSince: metrics.cycleStatus().failingSince,
      accounts: (await store.lastCycles()).filter((c) => options.health.accounts?.includes(c.account ?? DEFAULT_ACCOUNT) ?? true),
    });
    return json(healthy ? 200 : 503, options.health.replica ? { ...body, replica: options.health.replica() } : body);
  };

  const dashboard = options.dashboard ? dashboardRouter({ store, snapshot, metrics, clock, lastSuccessAt, options: options.dashboard }) : undefined;
  const basePath = options.dashboard?.config.http.basePath ?? '/';

  /** Finds the handler for a path (segments already URL-decoded); undefined for unknown paths. */
  const apiRoute = (segments: string[]): Handler | undefined => {
    const [a, b, serial, d, ...rest] = segments;
    if (rest.length > 0) return undefined;
    if (segments.length === 1 && a === '') return () => json(200, { service: 'boxwatch', endpoints: ENDPOINTS });
    if (segments.length === 1 && a === 'healthz') return health;
    if (segments.length === 1 && a === 'metrics') {
      return async () => ({ status: 200, body: await metrics.text(), type: metrics.registry.contentType });
    }
    if (a !== 'api') return undefined;
    // Alert states change only with a cycle (when silences are applied too): concurrent and repeated
    // reads of one query within a cycle share one rendering.
    if (segments.length === 2 && b === 'calls') return async (q) => json(200, await callsJson(options.calls, q));
    if (segments.length === 2 && b === 'alerts') return (q) => snapshot.memo(`/api/alerts?${q.toString()}`, () => alertsJson(options.alerts, q, clock.now())).then((v) => json(200, v));
    if (b !== 'boxes') return undefined;
    if (segments.length === 2) return async (q) => json(200, await boxesJson(await snapshot.boxes(), options.alerts, clock.now(), accountParam(q)));
    if (serial === undefined || serial === '') return undefined;
    if (segments.length === 3) return async () => json(200, await boxDetailJson(store, serial, options.alerts, clock.now()));
    if (d === 'history') return async (q) => json(200, await historyJson(store, serial, q, clock.now()));
    if (d === 'calls') return async (q) => json(200, await boxCallsJson(options.calls, store, serial, q));
    return undefined;
  };
  const route = (segments: string[]): Route | undefined => {
    const fromDashboard = dashboard?.(segments);
    if (fromDashboard) return fromDashboard;
    const handler = apiRoute(segments);
    return handler ? { handler } : undefined;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const started = performance.now();
    let path = '';
    let answer: Answer & { allow?: string };
    try {
      const target = req.url ?? '/';
      const q = target.indexOf('?');
      path = q < 0 ? target : target.slice(0, q);
      const query = new URLSearchParams(q < 0 ? '' : target.slice(q + 1));
      if (!path.startsWith('/')) throw notFound(`no such endpoint: ${path}`);
      // Behind a proxy that keeps the prefix: /boxwatch/x is served as /x (one that strips it works too).
      if (basePath !== '/' && `${path}/` === basePath) path = basePath;
      if (basePath !== '/' && path.startsWith(basePath)) path = path.slice(basePath.length - 1);
      const segments = path
        .slice(1)
        .split('/')
        .map((s) => {
          try {
            return decodeURIComponent(s);
          } catch {
            throw badRequest('path', `malformed percent-encoding in path segment "${s}"`);
          }
        });
      const found = route(segments);
      if (!found) throw notFound(`no such endpoint: ${path} (see / for the list)`);
      const methods = found.methods ?? ['GET', 'HEAD'];
      if (!methods.includes(req.method ?? '')) {
        const allow = methods.join(', ');
        const why = allow === ALLOW ? `this API is read-only (${ALLOW})` : `use ${allow}`;
        answer = { ...json(405, { error: 'method_not_allowed', message: `${req.method ?? ''} is not allowed; ${why}` }), allow };
      } else {
        const result = await found.handler(query, { query, req, res });
        if (result === null) return; // the handler answered itself (event stream)
        answer = result;
      }
    } catch (err) {
      if (err instanceof HttpError) {
        answer = json(err.status, err.toJSON());
      } else if (storeFailureCode(err) !== undefined) {
        // The database is out of reach or busy (a PostgreSQL server gone, SQLite locked): not a bug.
        logger.warn({ code: storeFailureCode(err), err: errorMessage(err), method: req.method, path }, 'http request failed: the database cannot be used right now');
        answer = json(503, { error: 'store_unavailable', message: 'the database cannot be used right now (see the daemon log)' });
      } else {
        logger.error({ err, method: req.method, path }, 'http request failed');
        answer = json(500, { error: 'internal', message: 'internal error (see the daemon log)' });
      }
    }
    const headers: Record<string, string | number> = {
      ...SECURITY_HEADERS,
      'content-type': answer.type,
      'content-length': Buffer.byteLength(answer.body),
      'cache-control': 'no-store',
      // The daemon's clock (simulated time in the demo): the page measures "2m ago" against it.
      'x-boxwatch-now': isoTime(clock.now()),
      ...answer.headers,
    };
    if (answer.allow !== undefined) headers.allow = answer.allow;
    res.writeHead(answer.status, headers);
    res.end(answer.body);
    logger.debug({ method: req.method, path, status: answer.status, ms: Math.round(performance.now() - started) }, 'http request');
  };

  const limits = { ...HTTP_LIMITS, ...options.limits };
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      // Live event streams are long responses, not long requests: this bounds receiving the request only.
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: limits.checkIntervalMs,
    },
    (req, res) => {
      handle(req, res).catch((err: unknown) => {
        logger.error({ err }, 'http response failed');
        res.destroy();
      });
    },
  );
  server.maxConnections = limits.maxConnections;
  let refusedLogged = false;
  server.on('drop', () => {
    metrics.httpConnectionDropped();
    if (!refusedLogged) logger.warn({ maxConnections: limits.maxConnections }, 'http connections over http.max_connections are closed as they arrive');
    refusedLogged = true;
  });

  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      reject(new BoxwatchError('http_listen', listenFailure(options.listen, err), { cause: err }));
    };
    server.once('error', onError);
    server.listen({ host: host === '' ? undefined : host, port }, () => {
      server.off('error', onError);
      resolve();
    });
  });
  server.on('error', (err) => logger.error({ err }, 'http server error'));
  const address = server.address() as AddressInfo;
  const url = urlOf(host === '' ? address.address : host, address.port);

  return {
    url,
    close: () =>
      new Promise<void>((resolve, reject) => {
        options.dashboard?.events.close(); // open pages' event streams would hold the server open
        const cut = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
        cut.unref();
        server.close((err) => {
          clearTimeout(cut);
          if (err) reject(err);
          else resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
