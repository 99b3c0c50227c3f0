/**
 * The dashboard's routes on the daemon's HTTP server: the HTML pages (src/web/pages.ts), their
 * static files (src/web/assets.ts), the live event stream (src/web/live.ts), the JSON the pages
 * read (api.ts) and the two writes (create and expire a silence).
 *
 * Writes are allowed only with `http.admin_token` configured, sent as `Authorization: Bearer
 * TOKEN`, and, when the request carries an `Origin` (every browser does on POST), only from this
 * server's own origin. Everything else is read-only.
 */
import { DEFAULT_ACCOUNT } from '../box-id.js';
import type { Awaitable } from '../awaitable.js';
import { timingSafeEqual, createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '../clock.js';
import type { Config } from '../config/index.js';
import type { Metrics } from '../metrics.js';
import type { AckRepository } from '../alerts/acks.js';
import type { AlertQueries, SilenceWrites } from '../alerts/repositories.js';
import type { FleetSnapshot } from './snapshot.js';
import type { Store } from '../domain/store.js';
import type { LeaseRepository } from '../domain/leases.js';
import { loadAssets } from '../web/assets.js';
import type { LiveEvents } from '../web/live.js';
import { alertsPage, boxPage, firmwarePage, overviewPage, silencesPage, uptimePage, type PageContext } from '../web/pages.js';
import {
  boxAlertsJson,
  boxUptimeJson,
  acksJson,
  clusterJson,
  createAckJson,
  createSilenceJson,
  expireSilenceJson,
  firmwareJson,
  fleetView,
  gatewayJson,
  notificationsJson,
  overviewJson,
  silencePreviewJson,
  silencesJson,
  transitionsJson,
  uptimeJson,
  type DashboardReader,
  type FleetView,
  type GatewayJson,
} from './api.js';
import { HttpError, badRequest, notFound } from './errors.js';

export interface DashboardOptions {
  alerts: AlertQueries & SilenceWrites;
  /** Acknowledgements (`POST /api/acks`, `GET /api/acks`, the ack of each alert). */
  acks?: AckRepository;
  config: Config;
  events: LiveEvents;
  /** The gateway's clock offset seen in the last cycle (ms), null before the first. */
  skewMs?: () => number | null;
  /** Replicas: the lease and replica rows (`/api/cluster`, the Fleet page's "Replicas" table). */
  leases?: Pick<LeaseRepository, 'leases' | 'replicas'>;
  /** This daemon as a replica (`cluster:`): its id and the accounts it leads; absent without `cluster:`. */
  replica?: () => { id: string; leads: string[] };
}

export interface Answer {
  status: number;
  body: string | Buffer;
  type: string;
  headers?: Record<string, string>;
}

export interface RequestContext {
  query: URLSearchParams;
  req: IncomingMessage;
  res: ServerResponse;
}

/** null: the handler answered itself (the event stream). */
export type Handler = (query: URLSearchParams, ctx: RequestContext) => Promise<Answer | null> | Answer | null;

export interface Route {
  handler: Handler;
  /** Methods allowed (default GET and HEAD); a POST handler calls checkWrite itself. */
  methods?: readonly string[];
}

const HTML_TYPE = 'text/html; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';
const MAX_BODY = 16 * 1024;
const IMMUTABLE = 'public, max-age=31536000, immutable';

export const jsonAnswer = (status: number, value: unknown): Answer => ({ status, body: `${JSON.stringify(value, null, 2)}\n`, type: JSON_TYPE });

export interface DashboardDeps {
  store: Store;
  /** The fleet as of the last cycles: its version says when the kept overview is out of date. */
  snapshot: FleetSnapshot;
  metrics: Metrics;
  clock: Clock;
  lastSuccessAt: () => Awaitable<number | null>;
  options: DashboardOptions;
}

/** The gateway line in every page's header. */
export function gatewayText(g: GatewayJson, now: number): { text: string; state: 'ok' | 'failing' | 'unknown' } {
  if (g.lastCycle === null) return { text: 'Gateway: no poll cycle yet', state: 'unknown' };
  const ago = (iso: string): string => {
    const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
    return s < 120 ? `${s}s ago` : s < 7200 ? `${Math.round(s / 60)}m ago` : `${Math.round(s / 3600)}h ago`;
  };
  const skew = g.skewMs !== null && g.skewMs !== 0 ? `; gateway clock ${g.skewMs > 0 ? 'ahead' : 'behind'} by ${Math.round(Math.abs(g.skewMs) / 1000)}s` : '';
  if (g.failingSince !== null) {
    const which = failingLabel(g.failingAccounts);
    return { text: `Gateway failing${which} since ${ago(g.failingSince)} (${g.lastErrorCode ?? 'error'}); last good cycle ${g.lastSuccessAt ? ago(g.lastSuccessAt) : 'never'}${skew}`, state: 'failing' };
  }
  return { text: `Gateway OK: last cycle ${g.lastSuccessAt ? ago(g.lastSuccessAt) : ago(g.lastCycle.startedAt)}${skew}`, state: 'ok' };
}

/** ` (acme, globex)`: the failing accounts, none named when only the single `gateway:` fails. */
function failingLabel(accounts: readonly string[]): string {
  return accounts.length === 0 || (accounts.length === 1 && accounts[0] === DEFAULT_ACCOUNT) ? '' : ` (${accounts.join(', ')})`;
}

function sameToken(given: string, expected: string): boolean {
  // Hashes of equal length, so that the comparison takes the same time whatever the input.
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** Throws 403/401 unless the request may write. */
export function checkWrite(req: IncomingMessage, adminToken: string | undefined): void {
  if (adminToken === undefined) throw new HttpError(403, 'writes_disabled', 'writes are turned off: set http.admin_token (see docs/dashboard.md)');
  const origin = req.headers.origin;
  if (origin !== undefined) {
    let host: string;
    try {
      host = new URL(origin).host;
    } catch {
      host = '';
    }
    const allowed = [req.headers.host, req.headers['x-forwarded-host']].flat().filter((h): h is string => typeof h === 'string' && h !== '');
    if (!allowed.includes(host)) throw new HttpError(403, 'bad_origin', 'cross-origin writes are refused');
  }
  const auth = req.headers.authorization ?? '';
  const m = /^Bearer (.+)$/.exec(auth);
  if (!m || !sameToken(m[1] as string, adminToken)) throw new HttpError(401, 'unauthorized', 'a valid admin token is required (Authorization: Bearer TOKEN)');
}

async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const type = req.headers['content-type'] ?? '';
  if (!type.startsWith('application/json')) throw new HttpError(415, 'unsupported_media_type', 'send the body as application/json');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) throw new HttpError(413, 'too_large', `the body must be under ${MAX_BODY} bytes`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw badRequest('body', 'the body is not valid JSON');
  }
}

/** The dashboard's router: undefined for paths it does not know (the API router tries next). */
export function dashboardRouter(deps: DashboardDeps): (segments: string[]) => Route | undefined {
  const { store, metrics, clock, options } = deps;
  const { config, events } = options;
  const reader: DashboardReader = { alerts: options.alerts, acks: options.acks, config };
  const assets = loadAssets();
  const writable = config.http.adminToken !== undefined;
  const gateway = async (): Promise<GatewayJson> =>
    gatewayJson({ lastSuccessAt: await deps.lastSuccessAt(), status: metrics.cycleStatus(), lastCycle: await store.lastCycle(), skewMs: options.skewMs?.() ?? null });
  const ctx = async (): Promise<PageContext> => ({ base: config.http.basePath, assets: assets.version, gateway: gatewayText(await gateway(), clock.now()) });
  const html = (render: (page: PageContext) => string): Route => ({ handler: async () => ({ status: 200, body: render(await ctx()), type: HTML_TYPE }) });
  const json = (fn: (q: URLSearchParams, now: number) => unknown): Route => ({ handler: async (q) => jsonAnswer(200, await fn(q, clock.now())) });
  // Boxes and alert states change only with a cycle: every open page asks after each one, and all
  // but the first read the view kept for that change of the fleet (any account's cycle, of this
  // process or another: FleetSnapshot.version).
  let kept: { version: number; view: FleetView } | undefined;
  const fleet = async (): Promise<FleetView> => {
    const version = await deps.snapshot.version();
    if (kept !== undefined && kept.version === version) return kept.view;
    const view = await fleetView(store, options.alerts, options.acks, clock.now());
    kept = { version, view };
    return view;
  };

  return (segments) => {
    const [a, b, c, d, ...rest] = segments;
    const n = segments.length;
    if (n === 1 && a === '') return html((page) => overviewPage(page));
    if (n === 1 && a === 'uptime') return html((page) => uptimePage(page));
    if (n === 1 && a === 'firmware') return html((page) => firmwarePage(page));
    if (n === 1 && a === 'alerts') return html((page) => alertsPage(page, writable));
    if (n === 1 && a === 'silences') return html((page) => silencesPage(page, writable));
    if (n === 2 && a === 'boxes' && b !== undefined && b !== '') {
      return {
        handler: async () => {
          if (!(await store.box(b))) throw notFound(`unknown box serial "${b}"`);
          return { status: 200, body: boxPage(await ctx(), b, { calls: config.calls !== undefined }), type: HTML_TYPE };
        },
      };
    }
    if (a === 'assets' && n >= 3) {
      const path = segments.slice(2).join('/');
      const asset = assets.get(path);
      if (!asset) return undefined;
      const cache = b === assets.version ? IMMUTABLE : 'no-cache';
      return { handler: () => ({ status: 200, body: asset.body, type: asset.type, headers: { 'cache-control': cache } }) };
    }
    if (n === 1 && a === 'events') {
      return {
        handler: (_q, { res }) => {
          res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no', connection: 'keep-alive' });
          if (!events.attach(res)) res.end('event: full\ndata: {}\n\n');
          return null;
        },
      };
    }
    if (a !== 'api' || rest.length > 0) return undefined;
    if (n === 2 && b === 'overview') return json(async (q, now) => overviewJson(await fleet(), config, q, now));
    if (n === 2 && b === 'gateway') return json(() => gateway());
    if (n === 2 && b === 'cluster') return json((q, now) => clusterJson(options.leases, options.replica?.() ?? null, q, now));
    if (n === 2 && b === 'uptime') return json((q, now) => uptimeJson(store, q, now));
    if (n === 2 && b === 'firmware') return json(() => firmwareJson(store));
    if (n === 2 && b === 'notifications') return json((q, now) => notificationsJson(reader, q, now));
    if (n === 3 && b === 'alerts' && c === 'transitions') return json((q, now) => transitionsJson(reader, q, now));
    if (b === 'boxes' && n === 4 && c !== undefined && c !== '' && d === 'uptime') return json((q, now) => boxUptimeJson(store, c, q, now));
    if (b === 'boxes' && n === 4 && c !== undefined && c !== '' && d === 'alerts') return json((q, now) => boxAlertsJson(store, reader, c, q, now));
    if (n === 2 && b === 'acks') {
      return {
        handler: async (q, { req }) => {
          if (req.method === 'POST') {
            checkWrite(req, config.http.adminToken);
            const body = await readJsonBody(req);
            return jsonAnswer(201, await createAckJson(reader, body, clock.now()));
          }
          return jsonAnswer(200, await acksJson(reader, q, clock.now()));
        },
        methods: ['GET', 'HEAD', 'POST'],
      };
    }
    if (b !== 'silences') return undefined;
    if (n === 2) {
      return {
        handler: async (q, { req }) => {
          if (req.method === 'POST') {
            checkWrite(req, config.http.adminToken);
            const body = await readJsonBody(req);
            return jsonAnswer(201, await createSilenceJson(reader, body, clock.now()));
          }
          return jsonAnswer(200, await silencesJson(reader, q, clock.now(), writable));
        },
        methods: ['GET', 'HEAD', 'POST'],
      };
    }
    if (n === 3 && c === 'preview') return json((q) => silencePreviewJson(reader, q));
    if (n === 4 && c !== undefined && c !== '' && d === 'expire') {
      return {
        handler: async (_q, { req }) => {
          checkWrite(req, config.http.adminToken);
          return jsonAnswer(200, await expireSilenceJson(reader, c, clock.now()));
        },
        methods: ['POST'],
      };
    }
    return undefined;
  };
}
