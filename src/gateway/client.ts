/**
 * The implementation of GatewayClient on undici: one keep-alive Pool per gateway, a per-attempt
 * deadline, bounded retries with exponential backoff and full jitter for GETs, bounded body reads,
 * zod parsing of every response, and typed GatewayErrors (errors.ts).
 *
 * The account secret key is sent only in the `account-secret-key` header. Errors carry our own
 * words, the vendor's message and sanitized copies of low-level errors, never the key.
 */
import { abortWith } from '../abort.js';
import { jitteredBackoff } from '../backoff.js';
import { parseRetryAfter } from '../retry-after.js';
import { FormData, Pool, type Dispatcher } from 'undici';
import { z } from 'zod';
import { TEXT_CAPS, TRUNCATED_MARK, truncate } from '../text.js';
import { systemClock, type Clock } from '../clock.js';
import { GatewayError, classifyErrorResponse, type GatewayErrorCode } from './errors.js';
import { redact, safeCause } from '../redact.js';
import { isoTime } from '../time-format.js';
import { API_PREFIX, BOX_FROM } from './messages.js';
import { E164 } from '../phone.js';
import { DEFAULT_MAX_BODY } from '../config/schema.js';
import {
  callListEnvelopeSchema,
  callSchema,
  deviceSchema,
  deviceSummarySchema,
  errorEnvelopeSchema,
  makeCallResultSchema,
  successEnvelope,
} from './schemas.js';
import type { Call, Device, DeviceSummary, MakeCallResult } from './schemas.js';
import type {
  CallListResult,
  DeviceListResult,
  Endpoint,
  GatewayClient,
  MakeCallInput,
  RequestEvent,
  RejectedRecord,
  RequestOptions,
} from './types.js';

export interface BackoffOptions {
  /** Delay ceiling of the first retry; doubles per retry (default 200 ms). */
  baseMs?: number;
  /** Upper bound of any backoff delay (default 5 s). */
  maxMs?: number;
}

export interface GatewayClientOptions {
  /** e.g. `http://127.0.0.1:8080`; a path prefix before `/api/gateway/v1` is kept. */
  baseUrl: string;
  secretKey: string;
  /** Per attempt, from sending the request to the end of the body (default 10 s). */
  timeoutMs?: number;
  /** Further attempts of a GET after a retryable failure (default 3). */
  retries?: number;
  backoff?: BackoffOptions;
  /**
   * The longest `Retry-After` a request waits out before trying again (default 30 s). A longer one
   * fails the request with `rate_limited` at once. Either way no request is sent before it ends.
   */
  maxRetryAfterMs?: number;
  /** Keep-alive connections open to the gateway at most (default 16). */
  connections?: number;
  /**
   * The largest response body read per endpoint, in bytes (defaults: DEFAULT_MAX_BODY). A larger
   * one is aborted as it arrives and fails the request with `too_large` (not retried).
   */
  maxBodyBytes?: Partial<Record<Endpoint, number>>;
  /** Called once per HTTP attempt. */
  onRequest?: (e: RequestEvent) => void;
  /** Used for backoff sleeps, Retry-After dates and attempt durations (default systemClock). */
  clock?: Clock;
  /** Source of jitter in [0, 1) (default Math.random). */
  random?: () => number;
}

const DEFAULTS = {
  timeoutMs: 10_000,
  retries: 3,
  baseMs: 200,
  maxMs: 5_000,
  maxRetryAfterMs: 30_000,
  connections: 16,
};

/**
 * The success envelopes, built once: zod compiles a schema on its first parse, so an envelope
 * built per request would be compiled again for every request.
 */
const ENVELOPES = {
  deviceList: successEnvelope(z.array(z.unknown())),
  device: successEnvelope(deviceSchema),
  call: successEnvelope(callSchema),
  makeCall: successEnvelope(makeCallResultSchema),
};

/** Errors of the connect phase: the request was certainly not written, so even make-call may retry. */
const CONNECT_PHASE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);

/** undici's own deadlines (headers, pauses in the body): reported like the attempt's. */
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** Characters a header value cannot hold (undici refuses them before sending anything). */
const INVALID_HEADER_CHAR = /[^\t\x20-\x7e\x80-\xff]/;

/** How long an idle kept-alive connection is kept (undici's default), or the server's hint less a second. */
const IDLE_SOCKET_MS = 4_000;

type Headers = Dispatcher.ResponseData['headers'];

interface Outgoing {
  endpoint: Endpoint;
  method: 'GET' | 'POST';
  path: string;
  /** Built per attempt: a FormData body is read once. */
  body?: () => FormData;
}

/** One answer: status, headers and the body as text (at most the endpoint's limit). */
interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

/** Creates a GatewayClient over HTTP. Call `close()` to release the connections. */
export function createGatewayClient(options: GatewayClientOptions): GatewayClient {
  const url = parseBaseUrl(options.baseUrl);
  const secret = options.secretKey;
  const timeoutMs = positive(options.timeoutMs, DEFAULTS.timeoutMs);
  const retries = Math.max(0, Math.floor(options.retries ?? DEFAULTS.retries));
  const baseMs = options.backoff?.baseMs ?? DEFAULTS.baseMs;
  const maxMs = options.backoff?.maxMs ?? DEFAULTS.maxMs;
  const maxRetryAfterMs = options.maxRetryAfterMs ?? DEFAULTS.maxRetryAfterMs;
  const clock = options.clock ?? systemClock;
  const maxBody = { ...DEFAULT_MAX_BODY, ...options.maxBodyBytes };
  const random = options.random ?? Math.random;
  const pool = new Pool(url.origin, {
    connections: positive(options.connections, DEFAULTS.connections),
    keepAliveTimeout: IDLE_SOCKET_MS,
    keepAliveTimeoutThreshold: 1_000,
    connect: { timeout: timeoutMs },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
  const headers = { 'account-secret-key': secret, accept: 'application/json' };
  // Checked here, not left to undici, so that the error names the header and never quotes the key.
  const keyProblem = INVALID_HEADER_CHAR.test(secret) ? Object.assign(new TypeError('Invalid character in header content ["account-secret-key"]'), { code: 'ERR_INVALID_CHAR' }) : undefined;
  const prefix = url.pathname.replace(/\/+$/, '') + API_PREFIX;
  /** Errors known to have happened before any byte of the request was written. */
  const notSent = new WeakSet<GatewayError>();
  /** No request before this time: the end of the last `Retry-After` the gateway gave (any endpoint). */
  let notBefore = 0;
  let closed = false;
  let closing: Promise<void> | undefined;

  /** A client-side check failed: no request is sent. Inputs are echoed, so the key is cut out. */
  const invalidArgument = (endpoint: Endpoint, message: string): GatewayError =>
    new GatewayError('invalid_argument', redact(message, [secret]), { endpoint });

  const emit = (endpoint: Endpoint, outcome: string, started: number, attempt: number): void => {
    options.onRequest?.({ endpoint, outcome, durationMs: Math.max(0, clock.now() - started), attempt });
  };

  /**
   * One request and its answer, read up to the endpoint's body limit, within `timeoutMs` from now.
   * Rejects with a GatewayError, or with the signal's reason when the caller aborts.
   */
  async function exchange(call: Outgoing, signal: AbortSignal | undefined): Promise<Answer> {
    if (closed) {
      throw new GatewayError('unavailable', `the gateway client is closed (${call.endpoint})`, { endpoint: call.endpoint, retryable: false });
    }
    signal?.throwIfAborted();
    // Nothing can be sent, and trying again cannot help.
    if (keyProblem !== undefined) throw unreachable(call, keyProblem, false);
    const deadline = new AbortController();
    // Whether the request may have been written is judged when the time runs out: the abort closes its connection.
    let connectedAtDeadline = false;
    const timer = setTimeout(() => {
      connectedAtDeadline = pool.stats.connected > 0;
      deadline.abort();
    }, timeoutMs);
    const unlink = abortWith(signal, deadline);
    try {
      const res = await pool.request({ method: call.method, path: prefix + call.path, headers, body: call.body?.(), signal: deadline.signal });
      const text = await readBounded(res, maxBody[call.endpoint], call.endpoint);
      return { status: res.statusCode, headers: res.headers, text };
    } catch (err) {
      if (signal?.aborted === true) throw signal.reason;
      if (err instanceof GatewayError) throw err;
      const code = (err as { code?: unknown } | null)?.code;
      if (deadline.signal.aborted || (typeof code === 'string' && TIMEOUT_CODES.has(code))) throw timedOut(call, connectedAtDeadline || !deadline.signal.aborted);
      throw unreachable(call, err);
    } finally {
      clearTimeout(timer);
      unlink();
    }
  }

  /** The attempt's time ran out. Not sent when no connection to the gateway was open (make-call may retry). */
  function timedOut(call: Outgoing, connected: boolean): GatewayError {
    const error = new GatewayError('unavailable', `gateway did not answer ${call.endpoint} within ${timeoutMs} ms`, { endpoint: call.endpoint });
    if (!connected) notSent.add(error);
    return error;
  }

  /**
   * A network failure (refused, reset, TLS, DNS), or a request that cannot be sent (`retryable`
   * false), with a sanitized copy of the low-level error.
   */
  function unreachable(call: Outgoing, err: unknown, retryable = true): GatewayError {
    const cause = safeCause(err, [secret]);
    const code = cause.code;
    const error = new GatewayError('unavailable', `gateway unreachable (${call.endpoint}): ${cause.message}`, { endpoint: call.endpoint, cause, retryable });
    if (code !== undefined && CONNECT_PHASE_CODES.has(code)) notSent.add(error);
    return error;
  }

  /** Sends with retries; returns the response of the first successful (2xx, success) attempt. */
  async function send<T extends z.ZodType>(
    call: Outgoing,
    schema: T,
    signal: AbortSignal | undefined,
  ): Promise<{ body: z.infer<T>; headers: Headers }> {
    for (let attempt = 1; ; attempt += 1) {
      signal?.throwIfAborted();
      // A new request first waits out a Retry-After given earlier (retries wait in delayFor).
      const wait = attempt === 1 ? notBefore - clock.now() : 0;
      if (wait > maxRetryAfterMs) {
        throw new GatewayError('rate_limited', `gateway asked for no request before ${isoTime(notBefore)} (Retry-After)`, {
          endpoint: call.endpoint,
          retryAfterMs: wait,
        });
      }
      if (wait > 0) await clock.sleep(wait, signal);
      const started = clock.now();
      try {
        const res = await exchange(call, signal);
        const json = parseJson(res.text, call.endpoint, res.status);
        const body = interpret(call.endpoint, res.status, res.headers, json, schema);
        emit(call.endpoint, 'ok', started, attempt);
        return { body, headers: res.headers };
      } catch (err) {
        if (!(err instanceof GatewayError)) throw err; // the caller aborted
        emit(call.endpoint, err.code, started, attempt);
        if (err.retryAfterMs !== undefined) notBefore = Math.max(notBefore, clock.now() + err.retryAfterMs);
        const mayRetry = call.method === 'GET' ? err.retryable : notSent.has(err);
        if (!mayRetry || attempt > retries || (err.retryAfterMs ?? 0) > maxRetryAfterMs) throw err;
        await clock.sleep(delayFor(err, attempt), signal);
      }
    }
  }

  function delayFor(err: GatewayError, attempt: number): number {
    if (err.retryAfterMs !== undefined) return Math.min(err.retryAfterMs, maxRetryAfterMs);
    return jitteredBackoff(attempt, baseMs, maxMs, random);
  }

  /** Turns one response into the parsed body, or throws the classified GatewayError. */
  function interpret<T extends z.ZodType>(
    endpoint: Endpoint,
    status: number,
    headers: Headers,
    json: unknown,
    schema: T,
  ): z.infer<T> {
    // A body that passes the success schema is no error envelope ('success' is not 'error'): the
    // error envelope is checked only when it does not (a failed zod parse builds its issues).
    const parsed = status >= 200 && status < 300 ? schema.safeParse(json) : undefined;
    if (parsed?.success) return parsed.data;
    const envelope = errorEnvelopeSchema.safeParse(json);
    const vendorMessage = envelope.success ? truncate(redact(envelope.data.message, [secret]), TEXT_CAPS.message, TRUNCATED_MARK) : undefined;
    if (parsed !== undefined && !envelope.success) {
      throw new GatewayError('schema', `unexpected ${endpoint} response: ${describeIssues(parsed.error.issues)}`, {
        endpoint,
        status,
      });
    }
    const code: GatewayErrorCode = classifyErrorResponse(endpoint, status, vendorMessage);
    const retryAfterMs = status === 429 || status === 503 ? parseRetryAfter(headers['retry-after'], clock.now()) : undefined;
    // A recognised vendor error keeps the vendor's words; anything else says what happened.
    const generic = code === 'rejected' || code === 'unavailable' || code === 'rate_limited' || vendorMessage === undefined;
    const message = generic
      ? `gateway answered HTTP ${status} on ${endpoint}${vendorMessage === undefined ? '' : `: ${vendorMessage}`}`
      : vendorMessage;
    throw new GatewayError(code, message, { endpoint, status, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) });
  }

  const get = (endpoint: Endpoint, path: string): Outgoing => ({ endpoint, method: 'GET', path });

  return {
    async listDevices(opts?: RequestOptions): Promise<DeviceListResult> {
      const { body, headers } = await send(get('device_list', '/box/device-list'), ENVELOPES.deviceList, opts?.signal);
      const { devices, rejected } = parseDeviceRecords(body.data);
      return { devices, rejected, serverTime: parseHttpDate(headers.date) };
    },

    async getDevice(serial: string, opts?: RequestOptions): Promise<Device> {
      if (typeof serial !== 'string' || serial.length === 0) {
        throw invalidArgument('device_details', 'device serial must be a non-empty string');
      }
      const call = get('device_details', `/box/device/${encodeURIComponent(serial)}`);
      return (await send(call, ENVELOPES.device, opts?.signal)).body.data;
    },

    async listCalls(params: { perPage?: number; page?: number } = {}, opts?: RequestOptions): Promise<CallListResult> {
      const query = new URLSearchParams();
      if (params.perPage !== undefined) {
        if (!isPositiveInt(params.perPage)) throw invalidArgument('call_list', `perPage must be a positive integer, got ${String(params.perPage)}`);
        query.set('per_page', String(params.perPage));
      }
      if (params.page !== undefined) {
        if (!isPositiveInt(params.page)) throw invalidArgument('call_list', `page must be a positive integer, got ${String(params.page)}`);
        query.set('page', String(params.page));
      }
      const qs = query.size > 0 ? `?${query.toString()}` : '';
      const { body } = await send(get('call_list', `/call/list${qs}`), callListEnvelopeSchema, opts?.signal);
      return { items: body.data, meta: body.meta };
    },

    async getCall(id: string | number, opts?: RequestOptions): Promise<Call> {
      const text = String(id);
      if (!/^\d+$/.test(text)) throw invalidArgument('call_details', `call id must be an integer, got "${text}"`);
      return (await send(get('call_details', `/call/${text}`), ENVELOPES.call, opts?.signal)).body.data;
    },

    async makeCall(input: MakeCallInput, opts?: RequestOptions): Promise<MakeCallResult> {
      const problem = checkMakeCall(input);
      if (problem !== undefined) throw invalidArgument('make_call', problem);
      const call: Outgoing = {
        endpoint: 'make_call',
        method: 'POST',
        path: '/call/make-call',
        body: () => {
          const form = new FormData();
          form.append('from', input.from);
          form.append('to', input.to);
          form.append('agent_id', String(input.agentId));
          return form;
        },
      };
      return (await send(call, ENVELOPES.makeCall, opts?.signal)).body.data;
    },

    /** Waits for the requests under way, then closes the connections; later requests fail. */
    async close() {
      closed = true;
      await (closing ??= pool.close());
    },
  };
}

/** The client-side checks of make-call: the problem, or undefined when the input is fine. */
function checkMakeCall(input: MakeCallInput): string | undefined {
  if (typeof input.from !== 'string' || !BOX_FROM.test(input.from)) {
    return `from must be box:<serial> (e.g. box:SN-0001), got "${String(input.from)}"`;
  }
  if (typeof input.to !== 'string' || !E164.test(input.to)) {
    return `to must be an E.164 phone number (+ then 8 to 15 digits), got "${String(input.to)}"`;
  }
  const agent = String(input.agentId);
  return /^\d+$/.test(agent) ? undefined : `agent id must be an integer, got "${agent}"`;
}

function parseBaseUrl(baseUrl: string): URL {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new GatewayError('invalid_argument', `invalid gateway URL "${baseUrl}"`, { endpoint: 'device_list' });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new GatewayError('invalid_argument', `gateway URL must be http or https, got "${url.protocol}"`, {
      endpoint: 'device_list',
    });
  }
  return url;
}

/**
 * Reads a body up to `limit` bytes. A larger one (by its Content-Length, or as it arrives) fails
 * with `too_large` at once and its connection is cut, so an endless body costs at most `limit`
 * bytes of memory.
 */
async function readBounded(res: Dispatcher.ResponseData, limit: number, endpoint: Endpoint): Promise<string> {
  const declared = res.headers['content-length'];
  if (typeof declared === 'string' && /^\d+$/.test(declared) && Number(declared) > limit) {
    // Its connection is closed; undici reports that as an error nobody needs.
    res.body.on('error', () => undefined).destroy();
    throw tooLarge(endpoint, limit);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  // Leaving the loop early (the throw) destroys the body, which closes its connection.
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > limit) throw tooLarge(endpoint, limit);
    chunks.push(chunk);
  }
  // A small answer (a device's details) arrives in one chunk: decoded as it is, not copied first.
  return (chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, total)).toString('utf8');
}

/** The error of a body larger than its endpoint's limit (`gateway.max_body`). */
function tooLarge(endpoint: Endpoint, limit: number): GatewayError {
  return new GatewayError('too_large', `the ${endpoint} response is larger than ${limit} bytes (gateway.max_body.${endpoint}); aborted`, { endpoint });
}

/**
 * Validates the device list record by record: a record that violates the schema (a mistyped or
 * out-of-range field, a bad or repeated serial) is set aside with the reason; the others are used.
 */
export function parseDeviceRecords(records: readonly unknown[]): Pick<DeviceListResult, 'devices' | 'rejected'> {
  const devices: DeviceSummary[] = [];
  const rejected: RejectedRecord[] = [];
  const seen = new Set<string>();
  // A loop, not forEach with an arrow made per call: V8 drops the optimized code of such an arrow
  // between cycles and compiles it again.
  for (let index = 0; index < records.length; index++) {
    const record = records[index];
    const parsed = deviceSummarySchema.safeParse(record);
    if (!parsed.success) {
      rejected.push({ index, serial: rejectedSerial(record), problem: describeIssues(parsed.error.issues) });
    } else if (seen.has(parsed.data.serial_no)) {
      rejected.push({ index, serial: rejectedSerial(record), problem: 'serial_no: listed more than once' });
    } else {
      seen.add(parsed.data.serial_no);
      devices.push(parsed.data);
    }
  }
  return { devices, rejected };
}

/** The serial of a record set aside, as far as it is a text (cut at its cap), or null. */
function rejectedSerial(record: unknown): string | null {
  const raw = (record as { serial_no?: unknown } | null)?.serial_no;
  return typeof raw === 'string' ? truncate(raw, TEXT_CAPS.serial, TRUNCATED_MARK) : null;
}

const MALFORMED = Symbol('malformed');

/**
 * Parses a body as JSON. A 2xx body that is not JSON is a 'schema' error marked retryable (a
 * truncated or garbled body is usually transient); on error statuses it is classified by status.
 */
function parseJson(text: string, endpoint: Endpoint, status: number): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    if (status >= 200 && status < 300) {
      throw new GatewayError('schema', `unexpected ${endpoint} response: body is not valid JSON`, {
        endpoint,
        status,
        retryable: true,
      });
    }
    return MALFORMED;
  }
}

/** `data[3].serial_no: expected string, received undefined` (at most three issues). */
export function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  const parts = issues.slice(0, 3).map((issue) => {
    const path = issue.path.reduce<string>(
      (acc, key) => (typeof key === 'number' ? `${acc}[${key}]` : acc === '' ? String(key) : `${acc}.${String(key)}`),
      '',
    );
    return `${path === '' ? '(root)' : path}: ${issue.message.replace(/^Invalid input: /, '')}`;
  });
  if (issues.length > 3) parts.push(`and ${issues.length - 3} more`);
  return parts.join('; ');
}


function parseHttpDate(value: string | string[] | undefined): number | null {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined) return null;
  const t = Date.parse(text);
  return Number.isNaN(t) ? null : t;
}

function isPositiveInt(n: number): boolean {
  return Number.isInteger(n) && n > 0;
}

function positive(value: number | undefined, fallback: number): number {
  return value !== undefined && Number.isFinite(value) && value > 0 ? value : fallback;
}

