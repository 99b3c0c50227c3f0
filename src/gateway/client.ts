/**
 * The implementation of GatewayClient on Node's own HTTP client (src/http-client.ts): one
 * keep-alive Agent per gateway, a per-attempt timeout, bounded retries with exponential backoff
 * and full jitter for GETs, bounded body reads, zod parsing of every response, and typed
 * GatewayErrors (errors.ts).
 *
 * The account secret key is sent only in the `account-secret-key` header. Errors carry our own
 * words, the vendor's message and sanitized copies of low-level errors, never the key.
 */
import { jitteredBackoff } from '../backoff.js';
import { parseRetryAfter } from '../retry-after.js';
import { randomBytes } from 'node:crypto';
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { z } from 'zod';
import { TEXT_CAPS, TRUNCATED_MARK, truncate } from '../text.js';
import { systemClock, type Clock } from '../clock.js';
import { GatewayError, classifyErrorResponse, type GatewayErrorCode } from './errors.js';
import { redact, safeCause } from '../redact.js';
import { isoTime } from '../time-format.js';
import { API_PREFIX, BOX_FROM, E164 } from './messages.js';
import { guardRequest, keepAliveAgent, requestTarget, startRequest } from '../http-client.js';
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

/** Default body limits: a device list of 100,000 boxes is about 20 MiB. */
export const DEFAULT_MAX_BODY: Readonly<Record<Endpoint, number>> = {
  device_list: 32 * 1024 * 1024,
  device_details: 256 * 1024,
  call_list: 8 * 1024 * 1024,
  call_details: 8 * 1024 * 1024,
  make_call: 64 * 1024,
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
const CONNECT_PHASE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']);

interface Outgoing {
  endpoint: Endpoint;
  method: 'GET' | 'POST';
  path: string;
  body?: () => Form;
}

/** A request body with its content type. */
interface Form {
  contentType: string;
  bytes: Buffer;
}

/** One answer: status, headers and the body as text (at most the endpoint's limit). */
interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
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
  const target = requestTarget(url);
  const agent = keepAliveAgent(target.protocol, positive(options.connections, DEFAULTS.connections));
  const headers = { 'account-secret-key': secret, accept: 'application/json' };
  const prefix = url.pathname.replace(/\/+$/, '') + API_PREFIX;
  /** Errors known to have happened before any byte of the request was written. */
  const notSent = new WeakSet<GatewayError>();
  /** No request before this time: the end of the last `Retry-After` the gateway gave (any endpoint). */
  let notBefore = 0;
  /** Exchanges under way: close() waits until none is left. */
  let inFlight = 0;
  let closed = false;
  /** Called when the last exchange under way ends, once close() waits for it. */
  let drained: (() => void) | undefined;
  let draining: Promise<void> | undefined;

  /** A client-side check failed: no request is sent. Inputs are echoed, so the key is cut out. */
  const invalidArgument = (endpoint: Endpoint, message: string): GatewayError =>
    new GatewayError('invalid_argument', redact(message, [secret]), { endpoint });

  const emit = (endpoint: Endpoint, outcome: string, started: number, attempt: number): void => {
    options.onRequest?.({ endpoint, outcome, durationMs: Math.max(0, clock.now() - started), attempt });
  };

  /**
   * One request and its answer, read up to the endpoint's body limit, within `timeoutMs` from now
   * (one timer), counted in `inFlight` until it ends. Rejects with a GatewayError, or with the
   * signal's reason when the caller aborts.
   */
  function exchange(call: Outgoing, signal: AbortSignal | undefined): Promise<Answer> {
    if (closed) {
      return Promise.reject(new GatewayError('unavailable', `the gateway client is closed (${call.endpoint})`, { endpoint: call.endpoint, retryable: false }));
    }
    return new Promise<Answer>((resolveAnswer, rejectAnswer) => {
      signal?.throwIfAborted();
      const form = call.body?.();
      // Counted from here on: every way out below calls `ended` once (a throw between the count
      // and them would leave close() waiting for ever, so the body is built before it).
      inFlight += 1;
      const ended = (): void => {
        inFlight -= 1;
        if (inFlight === 0) drained?.();
      };
      const resolve = (answer: Answer): void => {
        ended();
        resolveAnswer(answer);
      };
      const reject = (err: unknown): void => {
        ended();
        rejectAnswer(err);
      };
      let req: ClientRequest;
      try {
        req = startRequest(target, {
          agent,
          method: call.method,
          path: prefix + call.path,
          headers: form === undefined ? headers : { ...headers, 'content-type': form.contentType, 'content-length': form.bytes.length },
          ...(form && { body: form.bytes }),
        });
      } catch (err) {
        // Node refused to start it (ERR_INVALID_CHAR: a key with a newline, bypassing the
        // configuration's check): nothing was sent, and trying again cannot help.
        reject(unreachable(call, err, false));
        return;
      }
      const guard = guardRequest(req, {
        timeoutMs,
        signal,
        timeoutError: () => timedOut(call, req),
        requestError: (err) => unreachable(call, err),
        onFail: reject,
      });
      req.on('response', (res: IncomingMessage) => {
        readBounded(res, maxBody[call.endpoint], call.endpoint, (err, text) => {
          if (text === undefined) guard.fail(err instanceof GatewayError ? err : unreachable(call, err));
          else if (guard.release()) resolve({ status: res.statusCode ?? 0, headers: res.headers, text });
        });
      });
    });
  }

  /** The attempt's time ran out. Not sent when no connection was made yet (make-call may retry). */
  function timedOut(call: Outgoing, req: ClientRequest): GatewayError {
    const error = new GatewayError('unavailable', `gateway did not answer ${call.endpoint} within ${timeoutMs} ms`, { endpoint: call.endpoint });
    if (!connected(req)) notSent.add(error);
    return error;
  }

  /**
   * A network failure (refused, reset, TLS, DNS), or a request Node would not start (`retryable`
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
  ): Promise<{ body: z.infer<T>; headers: IncomingHttpHeaders }> {
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
    headers: IncomingHttpHeaders,
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
        body: () => multipartForm({ from: input.from, to: input.to, agent_id: String(input.agentId) }),
      };
      return (await send(call, ENVELOPES.makeCall, opts?.signal)).body.data;
    },

    /** Waits for the requests under way, then closes the connections; later requests fail. */
    async close() {
      closed = true;
      if (inFlight > 0) await (draining ??= new Promise<void>((resolve) => (drained = resolve)));
      agent.destroy();
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
 * Reads a body up to `limit` bytes, then calls `done` with the text or with the error. A larger
 * body (by its Content-Length, or as it arrives) fails with `too_large` at once; the caller then
 * cuts the connection (later calls of `done` are ignored), so an endless body costs at most
 * `limit` bytes of memory.
 */
function readBounded(res: IncomingMessage, limit: number, endpoint: Endpoint, done: (err: unknown, text?: string) => void): void {
  const declared = res.headers['content-length'];
  if (declared !== undefined && /^\d+$/.test(declared) && Number(declared) > limit) return done(tooLarge(endpoint, limit));
  const body = new BoundedBody(limit, endpoint, done);
  res.on('data', body.data.bind(body));
  res.on('end', body.end.bind(body));
  // The connection closed before the end of the body.
  res.on('error', done);
}

/**
 * A body being read by readBounded. Its listeners are its methods, bound, not closures made per
 * response: V8 drops the optimized code of those once a cycle's responses are garbage and
 * compiles it again the next cycle.
 */
class BoundedBody {
  private readonly chunks: Buffer[] = [];
  private total = 0;

  constructor(
    private readonly limit: number,
    private readonly endpoint: Endpoint,
    private readonly done: (err: unknown, text?: string) => void,
  ) {}

  data(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.total > this.limit) this.done(tooLarge(this.endpoint, this.limit));
    else this.chunks.push(chunk);
  }

  end(): void {
    // A small answer (a device's details) arrives in one chunk: decoded as it is, not copied first.
    const { chunks } = this;
    this.done(undefined, (chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, this.total)).toString('utf8'));
  }
}

/** The error of a body larger than its endpoint's limit (`gateway.max_body`). */
function tooLarge(endpoint: Endpoint, limit: number): GatewayError {
  return new GatewayError('too_large', `the ${endpoint} response is larger than ${limit} bytes (gateway.max_body.${endpoint}); aborted`, { endpoint });
}

/** True once the request has a connected socket: from then on some of it may have been written. */
function connected(req: ClientRequest): boolean {
  return req.socket !== null && !req.socket.connecting;
}

/** A multipart/form-data body of plain text fields (the caller has checked the values). */
function multipartForm(fields: Record<string, string>): Form {
  const boundary = `boxwatch-${randomBytes(12).toString('hex')}`;
  const parts = Object.entries(fields).map(([name, value]) => `--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  return { contentType: `multipart/form-data; boundary=${boundary}`, bytes: Buffer.from(`${parts.join('')}--${boundary}--\r\n`) };
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

export { parseRetryAfter };
