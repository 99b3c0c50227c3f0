/**
 * The simulator's HTTP server: `/api/gateway/v1` as the vendor document describes it (paths,
 * methods, envelope, `account-secret-key`, multipart make-call, exact error messages), plus
 * `/recordings/<token>.wav` for call recordings. The `Date` header carries simulated time.
 * With several accounts (accounts.ts) a request is answered by the account its key names.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { API_PREFIX, MESSAGES } from '../gateway/messages.js';
import type { Endpoint } from '../gateway/types.js';
import { SILENT_WAV } from './calls.js';
import { SIM_MESSAGES, messageForStatus } from './messages.js';
import { createAccounts, type SimAccount, type SimAccountsOptions } from './accounts.js';
import type { FaultEffect, Simulator } from './simulator.js';

export interface SimServerOptions extends SimAccountsOptions {
  /** Defaults to 127.0.0.1. */
  host?: string;
  /** Defaults to 8080; 0 picks a free port. */
  port?: number;
  /** Called with unexpected handler errors (never with request headers). */
  onError?: (err: unknown) => void;
  /**
   * The address recording URLs point to (`http://cdn.example:9000`): a separate recording host, as
   * vendors often have. Default: the simulator's own address (it serves `/recordings/` itself).
   */
  recordingsUrl?: string;
}

export interface RunningSimulator {
  /** `http://HOST:PORT`, with the port actually bound. */
  url: string;
  host: string;
  port: number;
  /** The first account's simulator (the only one unless `accounts` was given). */
  sim: Simulator;
  /** Every account, in order (one unless `accounts` was given). */
  accounts: readonly SimAccount[];
  close(): Promise<void>;
}

const MAX_BODY = 1024 * 1024;
const JSON_TYPE = 'application/json; charset=utf-8';
const DEFAULT_PER_PAGE = 20;
const MAX_PER_PAGE = 100;

type Route =
  | { endpoint: Endpoint; param?: string }
  | { error: 404 }
  | { error: 405; allow: string };

/** Maps a method and a path below the API prefix to an endpoint. */
export function route(method: string, path: string): Route {
  const parts = path.slice(API_PREFIX.length).replace(/\/$/, '').split('/').slice(1);
  const [group, name, extra] = parts;
  const want = (m: string, r: Route): Route => (method === m ? r : { error: 405, allow: m });
  if (group === 'call' && name === 'make-call' && parts.length === 2) return want('POST', { endpoint: 'make_call' });
  if (group === 'call' && name === 'list' && parts.length === 2) return want('GET', { endpoint: 'call_list' });
  if (group === 'call' && name && parts.length === 2) return want('GET', { endpoint: 'call_details', param: name });
  if (group === 'box' && name === 'device-list' && parts.length === 2) return want('GET', { endpoint: 'device_list' });
  if (group === 'box' && name === 'device' && extra && parts.length === 3) return want('GET', { endpoint: 'device_details', param: extra });
  return { error: 404 };
}

interface Reply {
  status: number;
  /** An object to serialize, or ready JSON text (the cached device list). */
  body: unknown;
  headers?: Record<string, string>;
}

const success = (data: unknown, extra: Record<string, unknown> = {}): Reply => ({ status: 200, body: { status: 'success', data, ...extra } });
const failure = (status: number, message: string, headers?: Record<string, string>): Reply => ({
  status,
  body: { status: 'error', message },
  ...(headers && { headers }),
});

/**
 * The simulator that answers a request carrying `key`. One account: always it (its faults then
 * answer before the key is checked, as a proxy in front of the service would). Several: the
 * account whose key it is, or none (a 401, no fault).
 */
function accountFor(sims: readonly Simulator[], key: string | undefined): Simulator | undefined {
  if (sims.length === 1) return sims[0];
  return sims.find((s) => s.acceptsKey(key, s.sync()));
}

/**
 * Builds the request handler for a simulator's accounts (one Simulator, or several: the first
 * answers what belongs to no account). `pending` collects latency timers for shutdown.
 */
export function createSimHandler(simulators: Simulator | readonly Simulator[], options: { onError?: (err: unknown) => void; pending?: Set<NodeJS.Timeout>; recordingsUrl?: string } = {}) {
  const sims: readonly Simulator[] = Array.isArray(simulators) ? simulators : [simulators as Simulator];
  const [first] = sims;
  if (first === undefined) throw new RangeError('a simulator has at least one account');
  const answerer: Simulator = first;
  const pending = options.pending ?? new Set<NodeJS.Timeout>();
  const delay = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => {
        pending.delete(timer);
        resolve();
      }, ms);
      pending.add(timer);
    });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sim.invalid');
    const method = req.method ?? 'GET';
    if (url.pathname.startsWith('/recordings/')) {
      serveRecording(sims, url.pathname, method, res);
      return;
    }
    if (url.pathname !== API_PREFIX && !url.pathname.startsWith(`${API_PREFIX}/`)) {
      send(res, answerer.sync() + answerer.fleet.skewMs, failure(404, SIM_MESSAGES.notFound));
      return;
    }
    const r = route(method, url.pathname);
    if ('error' in r) {
      const reply = r.error === 405 ? failure(405, SIM_MESSAGES.methodNotAllowed, { Allow: r.allow }) : failure(404, SIM_MESSAGES.notFound);
      send(res, answerer.sync() + answerer.fleet.skewMs, reply);
      return;
    }
    const key = req.headers['account-secret-key'];
    const keyText = typeof key === 'string' ? key : undefined;
    const sim = accountFor(sims, keyText);
    if (sim === undefined) {
      req.resume();
      send(res, answerer.sync() + answerer.fleet.skewMs, failure(401, MESSAGES.unauthorized));
      return;
    }
    const now = sim.sync();
    const fault = sim.faultFor(r.endpoint, now);
    if (fault.latencyMs > 0) await delay(fault.latencyMs);
    const effect = fault.effect;
    if (effect?.kind === 'reset') {
      req.socket.destroy();
      return;
    }
    if (effect?.kind === 'hang') return; // the connection stays open until the client or close() ends it
    if (effect?.kind === 'status') {
      const headers: Record<string, string> | undefined =
        effect.retryAfterMs === undefined ? undefined : { 'Retry-After': String(Math.ceil(effect.retryAfterMs / 1000)) };
      send(res, now + sim.fleet.skewMs, failure(effect.status, messageForStatus(effect.status), headers));
      return;
    }
    if (!sim.acceptsKey(keyText, now)) {
      req.resume();
      send(res, now + sim.fleet.skewMs, failure(401, MESSAGES.unauthorized));
      return;
    }
    const reply = await answer(sim, r.endpoint, r.param, url, req, now, options.recordingsUrl);
    send(res, now + sim.fleet.skewMs, reply.status === 200 && effect ? corrupt(r.endpoint, reply, effect) : reply);
  }

  return (req: IncomingMessage, res: ServerResponse): void => {
    handle(req, res).catch((err: unknown) => {
      options.onError?.(err);
      if (!res.headersSent) send(res, answerer.now() + answerer.fleet.skewMs, failure(500, SIM_MESSAGES.serverError));
      else res.destroy();
    });
  };
}

async function answer(sim: Simulator, endpoint: Endpoint, param: string | undefined, url: URL, req: IncomingMessage, now: number, recordingsUrl: string | undefined): Promise<Reply> {
  switch (endpoint) {
    case 'device_list':
      if (!sim.fleet.boxes.some((b) => b.listed)) return failure(404, MESSAGES.noDevices);
      return { status: 200, body: sim.fleet.deviceListBody() };
    case 'device_details': {
      const box = sim.fleet.getListed(safeDecode(param ?? ''));
      return box ? success(sim.fleet.details(box)) : failure(404, MESSAGES.deviceNotFound);
    }
    case 'call_details': {
      const call = /^\d{1,15}$/.test(param ?? '') ? sim.calls.get(Number(param)) : undefined;
      if (!call) return failure(404, MESSAGES.callNotFound);
      return success(sim.calls.detailsAt(call, now, recordingsUrl ?? publicBase(req)));
    }
    case 'call_list': {
      const perPage = pageParam(url.searchParams.get('per_page'), DEFAULT_PER_PAGE, MAX_PER_PAGE);
      if (perPage === undefined) return failure(400, MESSAGES.invalidPerPage);
      const page = pageParam(url.searchParams.get('page'), 1, Number.MAX_SAFE_INTEGER);
      if (page === undefined) return failure(400, SIM_MESSAGES.invalidPage);
      const { items, hasNext } = sim.calls.page(perPage, page);
      return success(
        items.map((c) => sim.calls.summaryAt(c, now)),
        { meta: { per_page: perPage, page, has_next: hasNext } },
      );
    }
    case 'make_call': {
      const fields = await readForm(req);
      if (fields === 'too_large') return failure(413, SIM_MESSAGES.bodyTooLarge);
      if (fields === 'unsupported') return failure(415, SIM_MESSAGES.unsupportedMediaType);
      const outcome = sim.makeCall(fields, now);
      if (!outcome.ok) {
        const message =
          outcome.error === 'invalid_device_serial' ? MESSAGES.invalidDeviceSerial : outcome.error === 'invalid_phone_number' ? MESSAGES.invalidPhoneNumber : SIM_MESSAGES.invalidAgent;
        return failure(422, message);
      }
      const { call } = outcome;
      return success({ call_id: String(call.id), status: 'initiated', agent_id: call.agentId, from: call.from, to: call.to });
    }
  }
}

/** Parses a positive integer query parameter; `undefined` when present but invalid. */
function pageParam(text: string | null, fallback: number, max: number): number | undefined {
  if (text === null) return fallback;
  if (!/^\d{1,16}$/.test(text)) return undefined;
  const n = Number(text);
  return n >= 1 && n <= max ? n : undefined;
}

/** Reads the make-call form (multipart/form-data, or urlencoded as a courtesy). */
async function readForm(req: IncomingMessage): Promise<{ from?: string; to?: string; agentId?: string } | 'too_large' | 'unsupported'> {
  const type = req.headers['content-type'] ?? '';
  const form = /^multipart\/form-data\s*;/i.test(type) || /^application\/x-www-form-urlencoded\b/i.test(type);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) return 'too_large';
    chunks.push(chunk);
  }
  if (!form) return 'unsupported';
  let data: FormData;
  try {
    data = await new Response(Buffer.concat(chunks), { headers: { 'content-type': type } }).formData();
  } catch {
    return {}; // an unreadable form has no usable fields
  }
  const text = (name: string): string | undefined => {
    const v = data.get(name);
    return typeof v === 'string' ? v : undefined;
  };
  const fields: { from?: string; to?: string; agentId?: string } = {};
  const from = text('from');
  const to = text('to');
  const agentId = text('agent_id');
  if (from !== undefined) fields.from = from;
  if (to !== undefined) fields.to = to;
  if (agentId !== undefined) fields.agentId = agentId;
  return fields;
}

/** Applies a malformed-JSON or schema-violation fault to a successful reply. */
function corrupt(endpoint: Endpoint, reply: Reply, effect: FaultEffect): Reply {
  const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
  if (effect.kind === 'malformed') return { ...reply, body: text.slice(0, Math.max(1, Math.floor(text.length / 2))) };
  if (effect.kind !== 'schema') return reply;
  const body = JSON.parse(text) as { data?: unknown; meta?: unknown };
  const data = asRecord(body.data);
  switch (endpoint) {
    case 'device_list': {
      const first = Array.isArray(body.data) ? asRecord(body.data[0]) : undefined;
      if (first) delete first.serial_no; // a required field missing
      break;
    }
    case 'device_details':
      if (data) data.battery_level = 'high'; // a mistyped field
      break;
    case 'call_list': {
      const meta = asRecord(body.meta);
      if (meta) delete meta.has_next;
      break;
    }
    case 'call_details':
      if (data) data.agent_id = String(data.agent_id);
      break;
    case 'make_call':
      if (data) delete data.call_id;
      break;
  }
  return { ...reply, body };
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** A recording of any account (its token is unguessable, so no key is needed). */
function serveRecording(sims: readonly Simulator[], path: string, method: string, res: ServerResponse): void {
  const token = /^\/recordings\/([0-9a-f]{8,64})\.wav$/.exec(path)?.[1];
  const sim = (token === undefined ? undefined : sims.find((s) => s.calls.byRecordingToken(token) !== undefined)) ?? (sims[0] as Simulator);
  const now = sim.sync();
  const call = token === undefined ? undefined : sim.calls.byRecordingToken(token);
  if (method !== 'GET' && method !== 'HEAD') {
    send(res, now + sim.fleet.skewMs, failure(405, SIM_MESSAGES.methodNotAllowed, { Allow: 'GET, HEAD' }));
    return;
  }
  if (!call || !sim.calls.recordingAvailable(call, now)) {
    send(res, now + sim.fleet.skewMs, failure(404, SIM_MESSAGES.recordingNotFound));
    return;
  }
  res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': SILENT_WAV.length, Date: new Date(now).toUTCString() });
  res.end(method === 'HEAD' ? undefined : SILENT_WAV);
}

function send(res: ServerResponse, now: number, reply: Reply): void {
  const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
  res.writeHead(reply.status, {
    'Content-Type': JSON_TYPE,
    'Content-Length': Buffer.byteLength(text),
    Date: new Date(now).toUTCString(),
    ...reply.headers,
  });
  res.end(text);
}

function publicBase(req: IncomingMessage): string {
  const host = req.headers.host ?? `${req.socket.localAddress ?? '127.0.0.1'}:${req.socket.localPort ?? 80}`;
  return `http://${host}`;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Starts a simulator and its HTTP server; resolves once it accepts connections. */
export async function startSimulator(options: SimServerOptions = {}): Promise<RunningSimulator> {
  const accounts = createAccounts(options);
  const sims = accounts.map((a) => a.sim);
  const sim = sims[0] as Simulator;
  const pending = new Set<NodeJS.Timeout>();
  const server: Server = createServer(
    createSimHandler(sims, { pending, ...(options.onError && { onError: options.onError }), ...(options.recordingsUrl !== undefined && { recordingsUrl: options.recordingsUrl.replace(/\/$/, '') }) }),
  );
  server.keepAliveTimeout = 30_000;
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8080, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // Keep the model moving while nobody asks, so that a late request never has days to catch up.
  const ticker = options.clock ? undefined : setInterval(() => sims.forEach((s) => s.sync()), 1000).unref();
  const port = (server.address() as AddressInfo).port;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${shownHost}:${port}`,
    host,
    port,
    sim,
    accounts,
    close() {
      closing ??= new Promise<void>((resolve) => {
        if (ticker) clearInterval(ticker);
        for (const t of pending) clearTimeout(t);
        pending.clear();
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
      return closing;
    },
  };
}
