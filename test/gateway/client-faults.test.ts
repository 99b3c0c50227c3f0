/**
 * The gateway client against a scripted local HTTP server: retries, timeouts, resets, 429 and
 * Retry-After, malformed and schema-violating bodies, classification by status and by message,
 * keep-alive reuse, and that the secret key never leaks into thrown errors.
 */
import { getEventListeners, setMaxListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Clock } from '../../src/clock.js';
import { createGatewayClient, type GatewayClientOptions } from '../../src/gateway/client.js';
import { GatewayError } from '../../src/gateway/errors.js';
import { MESSAGES } from '../../src/gateway/messages.js';
import type { GatewayClient, RequestEvent } from '../../src/gateway/types.js';
import { dependantSignals } from '../helpers/signal-refs.js';
import { caught, deepText } from './leak.js';
import { DEVICE_SUMMARY, deviceList, json, startLocalServer, type Handler, type LocalServer } from './local-server.js';

const KEY = 'sk-live-7f3a9c1e5b2d4a60-SECRET';
const NOW = Date.parse('2026-03-01T12:00:00Z');

/** A clock whose sleeps return at once and are recorded (no real waiting in backoff). */
function recordingClock(): Clock & { sleeps: number[] } {
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => NOW,
    sleep: (ms, signal) => {
      sleeps.push(ms);
      signal?.throwIfAborted();
      return Promise.resolve();
    },
  };
}

let server: LocalServer | undefined;
let client: GatewayClient | undefined;
afterEach(async () => {
  await client?.close();
  await server?.close();
  client = undefined;
  server = undefined;
});

async function setup(
  handler: Handler,
  options: Partial<GatewayClientOptions> = {},
): Promise<{ client: GatewayClient; server: LocalServer; clock: ReturnType<typeof recordingClock>; events: RequestEvent[] }> {
  server = await startLocalServer(handler);
  const clock = recordingClock();
  const events: RequestEvent[] = [];
  client = createGatewayClient({
    baseUrl: server.url,
    secretKey: KEY,
    clock,
    random: () => 0.5,
    onRequest: (e) => events.push(e),
    ...options,
  });
  return { client, server, clock, events };
}

async function gatewayError(promise: Promise<unknown>): Promise<GatewayError> {
  const err = await caught(() => promise);
  expect(err).toBeInstanceOf(GatewayError);
  return err as GatewayError;
}

const CALL_OK = { status: 'success', data: { call_id: '42', status: 'initiated', agent_id: 1, from: 'box:SN-0001', to: '+14155550123' } };
const CALL_INPUT = { from: 'box:SN-0001', to: '+14155550123', agentId: 1 };

describe('requests', () => {
  it('sends the key header, the API path and parses the device list with the Date header', async () => {
    const date = 'Sun, 01 Mar 2026 11:59:30 GMT';
    const { client, server } = await setup((_req, res) => deviceList(res, { date }));
    const result = await client.listDevices();
    expect(result).toEqual({ devices: [DEVICE_SUMMARY], rejected: [], serverTime: Date.parse(date) });
    expect(server.requests[0]).toMatchObject({ method: 'GET', url: '/api/gateway/v1/box/device-list' });
    expect(server.requests[0]?.headers['account-secret-key']).toBe(KEY);
  });

  it('keeps a path prefix of the base URL and sends per_page and page', async () => {
    server = await startLocalServer((_req, res) =>
      json(res, 200, { status: 'success', data: [], meta: { per_page: 5, page: 2, has_next: false } }),
    );
    client = createGatewayClient({ baseUrl: `${server.url}/vendor/`, secretKey: KEY });
    const result = await client.listCalls({ perPage: 5, page: 2 });
    expect(result).toEqual({ items: [], meta: { per_page: 5, page: 2, has_next: false } });
    expect(server.requests[0]?.url).toBe('/vendor/api/gateway/v1/call/list?per_page=5&page=2');
  });

  it('sends make-call as multipart/form-data with from, to and agent_id', async () => {
    const { client, server } = await setup((_req, res) => json(res, 200, CALL_OK));
    expect(await client.makeCall({ ...CALL_INPUT, agentId: '3' })).toEqual(CALL_OK.data);
    const req = server.requests[0];
    expect(req?.method).toBe('POST');
    expect(req?.url).toBe('/api/gateway/v1/call/make-call');
    expect(req?.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    const form = await new Request('http://x/', {
      method: 'POST',
      headers: { 'content-type': String(req?.headers['content-type']) },
      body: req?.body ?? '',
    }).formData();
    expect(Object.fromEntries(form.entries())).toEqual({ from: 'box:SN-0001', to: '+14155550123', agent_id: '3' });
  });

  it('reuses keep-alive connections for sequential requests', async () => {
    // One connection: undici may open a second one for the request right after the first (the first
    // connection is still marked busy then), which would hide whether the first one is reused.
    const { client, server } = await setup((_req, res) => deviceList(res), { connections: 1 });
    for (let i = 0; i < 20; i += 1) await client.listDevices();
    expect(server.requests).toHaveLength(20);
    expect(server.sockets()).toBe(1);
  });

  // A poll every 30 s would otherwise reuse sockets idle for the whole interval, which a gateway or
  // load balancer may be closing just then. The servers here never close an idle socket themselves.
  it.each([
    ['announcing Keep-Alive: timeout=2 (closed a second before)', { 'keep-alive': 'timeout=2' }],
    ['announcing no timeout (closed after 4 s)', {}],
  ])('closes an idle socket by itself, the gateway %s; the next request opens a new one', async (_name, hint) => {
    server = await startLocalServer((_req, res) => deviceList(res, hint), { keepAliveTimeoutMs: 0 });
    // One connection: undici may open a second one for the request right after the first (the first
    // connection is still marked busy then), which would hide whether the first one is reused.
    client = createGatewayClient({ baseUrl: server.url, secretKey: KEY, retries: 0, connections: 1 });
    await client.listDevices();
    await client.listDevices();
    expect(server.sockets()).toBe(1); // kept alive between requests in a row
    await expect.poll(() => server!.openNow(), { timeout: 20_000, interval: 100 }).toBe(0); // closed by the client
    await client.listDevices();
    expect(server.sockets()).toBe(2);
    expect(server.requests).toHaveLength(3);
  }, 30_000);

  it('opens at most `connections` sockets for concurrent requests', async () => {
    const { client, server } = await setup((_req, res) => setTimeout(() => deviceList(res), 20), { connections: 3 });
    await Promise.all(Array.from({ length: 12 }, () => client.listDevices()));
    expect(server.requests).toHaveLength(12);
    expect(server.sockets()).toBe(3);
  });

  it('never has more than `connections` sockets open or requests waiting at the gateway, however many are asked at once', async () => {
    let waiting = 0;
    let mostWaiting = 0;
    const { client, server } = await setup(
      (_req, res) => {
        mostWaiting = Math.max(mostWaiting, (waiting += 1));
        setTimeout(() => {
          waiting -= 1;
          deviceList(res);
        }, 5);
      },
      { connections: 4 },
    );
    await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 === 0 ? client.listDevices() : client.getDevice('SN-0001').catch(() => undefined))));
    expect(server.requests).toHaveLength(60);
    expect(server.maxOpen()).toBe(4);
    expect(mostWaiting).toBe(4);
  });

  it('opens a new connection when the gateway closed an idle one between requests', async () => {
    const { client, server, events } = await setup((req, res) => {
      deviceList(res);
      res.on('finish', () => setTimeout(() => req.socket.destroy(), 5)); // the gateway's idle timeout, early
    });
    await client.listDevices();
    await vi.waitFor(() => expect(server.openNow()).toBe(0), { interval: 5 }); // the gateway closed it
    await client.listDevices();
    expect(server.sockets()).toBe(2);
    expect(events.map((e) => [e.outcome, e.attempt])).toEqual([
      ['ok', 1],
      ['ok', 1],
    ]);
  });

  // The race a keep-alive client always has: the gateway closes a socket just as a request is written on it.
  it('retries a GET on a new connection when a kept-alive socket closes without answering', async () => {
    const served = new WeakSet<object>();
    const { client, server, clock, events } = await setup((req, res) => {
      if (served.has(req.socket)) return void req.socket.destroy(); // a reused socket: closed unanswered
      served.add(req.socket);
      deviceList(res);
    }, { connections: 1 });
    await client.listDevices();
    expect((await client.listDevices()).devices).toHaveLength(1);
    expect(server.requests).toHaveLength(3);
    expect(server.sockets()).toBe(2);
    expect(clock.sleeps).toEqual([100]); // the first retry's backoff (random 0.5 of 200 ms)
    expect(events.map((e) => [e.outcome, e.attempt])).toEqual([
      ['ok', 1],
      ['unavailable', 1],
      ['ok', 2],
    ]);
  });

  it('does not send make-call again when a kept-alive socket closes without answering (it may have been placed)', async () => {
    const served = new WeakSet<object>();
    const { client, server } = await setup((req, res) => {
      if (served.has(req.socket)) return void req.socket.destroy();
      served.add(req.socket);
      json(res, 200, CALL_OK);
    }, { connections: 1 });
    await client.makeCall(CALL_INPUT);
    expect(await gatewayError(client.makeCall(CALL_INPUT))).toMatchObject({ code: 'unavailable', endpoint: 'make_call' });
    expect(server.requests).toHaveLength(2);
  });

  it('close() lets a request under way finish, closes the connections, and later requests fail', async () => {
    let answer: (() => void) | undefined;
    const { client, server } = await setup((_req, res) => (answer = () => deviceList(res)));
    const listing = client.listDevices();
    await vi.waitFor(() => expect(server.requests).toHaveLength(1));
    const order: string[] = [];
    const closing = client.close().then(() => order.push('closed'));
    const listed = listing.then((l) => order.push(`listed ${l.devices.length}`));
    answer?.();
    await Promise.all([closing, listed]);
    expect(order).toEqual(['listed 1', 'closed']); // close() waited for the answer
    await vi.waitFor(() => expect(server.openNow()).toBe(0));
    expect(await gatewayError(client.listDevices())).toMatchObject({ code: 'unavailable', retryable: false });
    expect(server.requests).toHaveLength(1);
  });

  it('leaves no abort listener on the caller\'s signal once requests end', async () => {
    const { client } = await setup((_req, res, i) => (i % 3 === 2 ? json(res, 500, {}) : deviceList(res)), { retries: 1 });
    const signal = new AbortController().signal;
    setMaxListeners(0, signal); // 30 requests wait on it at once
    await Promise.all(Array.from({ length: 30 }, () => client.listDevices({ signal }).catch(() => undefined)));
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  });

  it('the abort of a signal shared by many requests fails every one of them and leaves no listener', async () => {
    // A poll cycle gives one signal to all its requests: its abort cuts each request under way.
    const { client, server } = await setup(() => undefined, { connections: 30 }); // never answers
    const controller = new AbortController();
    setMaxListeners(0, controller.signal); // one listener per request under way, as on a cycle's signal
    const waiting = Array.from({ length: 30 }, () => caught(() => client.listDevices({ signal: controller.signal })));
    await vi.waitFor(() => expect(server.requests).toHaveLength(30));
    controller.abort(new Error('shutting down'));
    for (const err of await Promise.all(waiting)) expect(err).toEqual(new Error('shutting down'));
    // Each request's connection is cut. undici may open idle ones again (nodejs/undici#5845), not
    // counted here: no request is sent on them.
    await vi.waitFor(() => expect(server.sockets() - server.openNow()).toBeGreaterThanOrEqual(30));
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(server.requests).toHaveLength(30); // none was sent again
  });

  it('keeps nothing of its requests in a long-lived signal the caller\'s signal is made from', async () => {
    const { client } = await setup((_req, res) => deviceList(res));
    const daemon = new AbortController();
    const cycle = AbortSignal.any([daemon.signal, new AbortController().signal]);
    for (let i = 0; i < 50; i++) await client.listDevices({ signal: cycle });
    expect(dependantSignals(daemon.signal)).toBe(1); // the cycle's own signal, nothing per request
  });

  it('a second close() also waits for the request under way', async () => {
    let answer: (() => void) | undefined;
    const { client, server } = await setup((_req, res) => (answer = () => deviceList(res)));
    const listing = client.listDevices();
    await vi.waitFor(() => expect(server.requests).toHaveLength(1));
    const order: string[] = [];
    const first = client.close().then(() => order.push('closed'));
    const second = client.close().then(() => order.push('closed'));
    const listed = listing.then((l) => order.push(`listed ${l.devices.length}`));
    answer?.();
    await Promise.all([first, second, listed]);
    expect(order).toEqual(['listed 1', 'closed', 'closed']); // both waited for the answer
  });

  it('tolerates unknown extra fields and keeps them', async () => {
    const { client } = await setup((_req, res) =>
      json(res, 200, { status: 'success', data: [{ ...DEVICE_SUMMARY, new_field: 'x' }], extra: true }),
    );
    const { devices } = await client.listDevices();
    expect(devices[0]).toMatchObject({ serial_no: 'SN-0001', new_field: 'x' });
  });
});

describe('client-side checks', () => {
  it.each([
    [{ ...CALL_INPUT, from: 'SN-0001' }, /from must be box:<serial>/],
    [{ ...CALL_INPUT, from: 'box:' }, /from must be box:<serial>/],
    [{ ...CALL_INPUT, to: '4155550123' }, /to must be an E\.164/],
    [{ ...CALL_INPUT, to: '+1415' }, /to must be an E\.164/],
    [{ ...CALL_INPUT, agentId: 'abc' }, /agent id must be an integer/],
  ])('rejects make-call %j without a request', async (input, message) => {
    const { client, server } = await setup((_req, res) => json(res, 200, CALL_OK));
    const err = await gatewayError(client.makeCall(input));
    expect(err.code).toBe('invalid_argument');
    expect(err.message).toMatch(message);
    expect(server.requests).toHaveLength(0);
  });

  it('rejects a bad page, per_page or call id without a request', async () => {
    const { client, server } = await setup((_req, res) => json(res, 200, {}));
    expect((await gatewayError(client.listCalls({ perPage: 0 }))).code).toBe('invalid_argument');
    expect((await gatewayError(client.listCalls({ page: 1.5 }))).code).toBe('invalid_argument');
    expect((await gatewayError(client.getCall('12/../x'))).code).toBe('invalid_argument');
    expect((await gatewayError(client.getDevice(''))).code).toBe('invalid_argument');
    expect(server.requests).toHaveLength(0);
  });
});

describe('retries of GETs', () => {
  it('retries a 5xx and then succeeds, with jittered exponential backoff', async () => {
    const { client, server, clock, events } = await setup(
      (_req, res, i) => (i < 2 ? json(res, 502, { status: 'error', message: 'bad gateway' }) : deviceList(res)),
      { backoff: { baseMs: 100, maxMs: 1000 } },
    );
    expect((await client.listDevices()).devices).toHaveLength(1);
    expect(server.requests).toHaveLength(3);
    expect(clock.sleeps).toEqual([50, 100]); // random 0.5 of 100, 200
    expect(events.map((e) => [e.outcome, e.attempt])).toEqual([
      ['unavailable', 1],
      ['unavailable', 2],
      ['ok', 3],
    ]);
  });

  it('gives up after the configured retries with unavailable and the status', async () => {
    const { client, server, clock } = await setup((_req, res) => json(res, 500, { oops: true }), {
      retries: 2,
      backoff: { baseMs: 100, maxMs: 150 },
    });
    const err = await gatewayError(client.listDevices());
    expect(err).toMatchObject({ code: 'unavailable', status: 500, retryable: true, endpoint: 'device_list' });
    expect(server.requests).toHaveLength(3);
    expect(clock.sleeps).toEqual([50, 75]);
  });

  it('honours Retry-After in seconds on 429', async () => {
    const { client, server, clock } = await setup((_req, res, i) =>
      i === 0 ? json(res, 429, { status: 'error', message: 'Too many requests' }, { 'retry-after': '7' }) : deviceList(res),
    );
    await client.listDevices();
    expect(server.requests).toHaveLength(2);
    expect(clock.sleeps).toEqual([7000]);
  });

  it('honours Retry-After as an HTTP date; a longer one than maxRetryAfterMs fails at once and nothing is sent before it ends', async () => {
    const at = new Date(NOW + 5000).toUTCString();
    const { client, server, clock } = await setup((_req, res, i) => {
      if (i === 0) json(res, 503, { status: 'error', message: 'down' }, { 'retry-after': at });
      else if (i === 1) json(res, 429, { status: 'error', message: 'slow down' }, { 'retry-after': '3600' });
      else deviceList(res);
    });
    expect(await gatewayError(client.listDevices())).toMatchObject({ code: 'rate_limited', status: 429, retryAfterMs: 3_600_000 });
    expect(clock.sleeps).toEqual([5000]);
    expect(server.requests).toHaveLength(2);
    // The clock has not moved: the next request fails without being sent.
    expect(await gatewayError(client.getDevice('SN-0001'))).toMatchObject({ code: 'rate_limited', retryAfterMs: 3_600_000 });
    expect(server.requests).toHaveLength(2);
  });

  it('reports rate_limited with retryAfterMs when retries run out', async () => {
    const { client } = await setup((_req, res) => json(res, 429, { status: 'error', message: 'x' }, { 'retry-after': '2' }), {
      retries: 0,
    });
    const err = await gatewayError(client.listDevices());
    expect(err).toMatchObject({ code: 'rate_limited', status: 429, retryAfterMs: 2000, retryable: true });
  });

  it('times out a slow answer and retries', async () => {
    const { client, server } = await setup(
      (_req, res, i) => {
        if (i === 0) setTimeout(() => deviceList(res), 10_000).unref();
        else deviceList(res);
      },
      { timeoutMs: 1_000 }, // what the retry must answer within, even on a loaded machine
    );
    expect((await client.listDevices()).devices).toHaveLength(1);
    expect(server.requests).toHaveLength(2);
  });

  it('times out an answer that trickles in for longer than the timeout (the time is per attempt, not per pause)', async () => {
    const { client } = await setup(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const drip = setInterval(() => (res.destroyed ? clearInterval(drip) : res.write(' ')), 20);
      },
      { timeoutMs: 300, retries: 0 },
    );
    const err = await gatewayError(client.listDevices());
    expect(err).toMatchObject({ code: 'unavailable', message: 'gateway did not answer device_list within 300 ms' });
  });

  it('reports a timeout as unavailable when retries run out', async () => {
    const { client } = await setup((_req, res) => setTimeout(() => deviceList(res), 2000).unref(), {
      timeoutMs: 100,
      retries: 0,
    });
    const err = await gatewayError(client.listDevices());
    expect(err.code).toBe('unavailable');
    expect(err.message).toMatch(/did not answer device_list within 100 ms/);
  });

  it('retries after a connection reset', async () => {
    const { client, server } = await setup((req, res, i) => (i === 0 ? req.socket.destroy() : deviceList(res)));
    expect((await client.listDevices()).devices).toHaveLength(1);
    expect(server.requests).toHaveLength(2);
  });

  it('retries malformed JSON (retryable schema error), then succeeds', async () => {
    const { client, server } = await setup((_req, res, i) => {
      if (i === 0) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"status":"success","data":[{"id":1,');
      } else deviceList(res);
    });
    expect((await client.listDevices()).devices).toHaveLength(1);
    expect(server.requests).toHaveLength(2);
  });

  it('reports malformed JSON as schema when retries run out', async () => {
    const { client } = await setup((_req, res) => res.end('<html>oops</html>'), { retries: 1 });
    const err = await gatewayError(client.listDevices());
    expect(err).toMatchObject({ code: 'schema', retryable: true, status: 200 });
    expect(err.message).toMatch(/not valid JSON/);
  });

  it('stops at once when the caller aborts', async () => {
    const controller = new AbortController();
    const { client, server } = await setup(() => controller.abort(new Error('shutting down')));
    const err = await caught(() => client.listDevices({ signal: controller.signal }));
    expect(err).toEqual(new Error('shutting down'));
    expect(server.requests).toHaveLength(1);
  });
});

describe('schema violations', () => {
  // One bad record once failed the whole list, every cycle: the fleet went blind.
  it('sets aside each invalid device-list record, naming its field, and keeps the rest', async () => {
    const { serial_no: _drop, ...noSerial } = DEVICE_SUMMARY;
    const bad: [unknown, string][] = [
      [noSerial, 'serial_no: expected string'],
      [{ ...DEVICE_SUMMARY, serial_no: 'SN-2', battery_level: '80' }, 'battery_level: expected number'],
      [{ ...DEVICE_SUMMARY, serial_no: 'SN-3', battery_level: 12.5 }, 'battery_level: expected int'],
      [{ ...DEVICE_SUMMARY, serial_no: 'SN-4', battery_level: 101 }, 'battery_level: Too big'],
      [{ ...DEVICE_SUMMARY, serial_no: 'SN-5', battery_level: -1 }, 'battery_level: Too small'],
      [{ ...DEVICE_SUMMARY, serial_no: '' }, 'serial_no: must not be empty'],
      [{ ...DEVICE_SUMMARY, serial_no: 'SN-\u00007' }, 'serial_no: must not contain control characters'],
      [{ ...DEVICE_SUMMARY, serial_no: 'S'.repeat(65) }, 'serial_no: must be at most 64 characters'],
      [{ ...DEVICE_SUMMARY, serial_no: 'SN-9', last_seen: '1953-01-01T00:00:00Z' }, 'last_seen: must lie within 2000-01-01 to 2100-01-01'],
      [{ ...DEVICE_SUMMARY, serial_no: 'SN-10', last_seen: '+275760-09-13T00:00:00Z' }, 'last_seen: must lie within'],
      [{ ...DEVICE_SUMMARY, serial_no: 'SN-11', last_seen: 'yesterday' }, 'last_seen: expected an ISO 8601 timestamp'],
      [{ ...DEVICE_SUMMARY, serial_no: 'SN-12', last_seen: `2026-03-01T12:00:00${'0'.repeat(60)}Z` }, 'last_seen: must be at most 64 characters'],
      [DEVICE_SUMMARY, 'serial_no: listed more than once'],
      [null, '(root): expected object'],
    ];
    const good = { ...DEVICE_SUMMARY, serial_no: 'SN-0002', device_name: 'N'.repeat(10_000) };
    const { client, server } = await setup((_req, res) => json(res, 200, { status: 'success', data: [DEVICE_SUMMARY, ...bad.map(([r]) => r), good] }));
    const result = await client.listDevices();
    expect(result.devices.map((d) => d.serial_no)).toEqual(['SN-0001', 'SN-0002']);
    expect(result.rejected.map((r) => r.index)).toEqual(bad.map((_, i) => i + 1));
    bad.forEach(([, problem], i) => expect(result.rejected[i]?.problem).toContain(problem));
    expect(result.rejected[0]?.serial).toBeNull();
    // Text fields are capped at a documented length and marked as cut.
    expect(result.devices[1]?.device_name).toHaveLength(200);
    expect(result.devices[1]?.device_name.endsWith('…[truncated]')).toBe(true);
    expect(server.requests).toHaveLength(1);
  });

  // An endless body once drove the daemon to 4.2 GB of memory.
  it('aborts a body larger than the endpoint limit as it arrives, counts it, and does not retry', async () => {
    let written = 0;
    const { client, server, events } = await setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }); // chunked, no Content-Length
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const pump = (): void => {
        while (!res.destroyed && written < 1024 ** 3) {
          written += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
      };
      res.on('close', () => undefined);
      pump();
    }, { maxBodyBytes: { device_list: 1024 * 1024 } });
    const err = await gatewayError(client.listDevices());
    expect(err).toMatchObject({ code: 'too_large', retryable: false, endpoint: 'device_list' });
    expect(err.message).toBe('the device_list response is larger than 1048576 bytes (gateway.max_body.device_list); aborted');
    expect(events).toEqual([expect.objectContaining({ endpoint: 'device_list', outcome: 'too_large', attempt: 1 })]);
    expect(server.requests).toHaveLength(1);
    expect(written).toBeLessThan(64 * 1024 * 1024); // the server stopped: the connection was cut early
  });

  it('refuses a body whose Content-Length is over the limit without reading it', async () => {
    const { client } = await setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(400 * 1024 ** 2) });
      res.write('{"status":"success","data":[');
    });
    const err = await gatewayError(client.getDevice('SN-0001'));
    expect(err).toMatchObject({ code: 'too_large', endpoint: 'device_details' });
    expect(err.message).toContain('larger than 262144 bytes (gateway.max_body.device_details)');
  });

  it('reads a body within the limit whether its length is declared or it comes in chunks', async () => {
    const body = JSON.stringify({ status: 'success', data: [DEVICE_SUMMARY, { ...DEVICE_SUMMARY, serial_no: 'SN-0002' }] });
    let requests = 0;
    const { client } = await setup((_req, res) => {
      if ((requests += 1) === 1) return json(res, 200, JSON.parse(body) as object); // Content-Length set
      res.writeHead(200, { 'content-type': 'application/json' }); // no Content-Length: read as it arrives
      res.write(body.slice(0, 40));
      setTimeout(() => res.end(body.slice(40)), 10);
    });
    for (let i = 0; i < 2; i++) expect((await client.listDevices()).devices.map((d) => d.serial_no)).toEqual(['SN-0001', 'SN-0002']);
    expect(requests).toBe(2);
  });

  it('names a mistyped field of device details and does not retry', async () => {
    const { client, server } = await setup((_req, res) =>
      json(res, 200, { status: 'success', data: { ...DEVICE_SUMMARY, signal_strength: 12, registered_at: '2025-01-01T00:00:00Z', location: 'x', ip_address: '10.0.0.1' } }),
    );
    const err = await gatewayError(client.getDevice('SN-0001'));
    expect(err).toMatchObject({ code: 'schema', retryable: false, endpoint: 'device_details' });
    expect(err.message).toContain('data.signal_strength: Too big');
    expect(server.requests).toHaveLength(1);
  });

  it('rejects a call list without meta', async () => {
    const { client } = await setup((_req, res) => json(res, 200, { status: 'success', data: [] }));
    const err = await gatewayError(client.listCalls());
    expect(err.code).toBe('schema');
    expect(err.message).toContain('meta: expected object');
  });
});

describe('classification by status and by message', () => {
  const cases: [string, number, unknown, (c: GatewayClient) => Promise<unknown>, string][] = [
    ['unauthorized message on a 400', 400, { status: 'error', message: MESSAGES.unauthorized }, (c) => c.listDevices(), 'unauthorized'],
    ['401 with an odd message', 401, { status: 'error', message: 'nope' }, (c) => c.listDevices(), 'unauthorized'],
    ['401 without a body', 401, '', (c) => c.listDevices(), 'unauthorized'],
    ['404 envelope on call details', 404, { status: 'error', message: 'gone' }, (c) => c.getCall(9), 'call_not_found'],
    ['404 envelope on device details', 404, { status: 'error', message: 'gone' }, (c) => c.getDevice('X'), 'device_not_found'],
    ['no devices message', 404, { status: 'error', message: MESSAGES.noDevices }, (c) => c.listDevices(), 'no_devices'],
    ['404 without envelope (wrong base URL)', 404, '<h1>Not Found</h1>', (c) => c.listDevices(), 'rejected'],
    ['404 envelope with an odd message on the device list', 404, { status: 'error', message: 'Not found' }, (c) => c.listDevices(), 'rejected'],
    ['200 with an error envelope', 200, { status: 'error', message: MESSAGES.callNotFound }, (c) => c.getCall(9), 'call_not_found'],
    ['invalid serial on 400', 400, { status: 'error', message: MESSAGES.invalidDeviceSerial }, (c) => c.makeCall(CALL_INPUT), 'invalid_device_serial'],
    ['invalid phone on 422', 422, { status: 'error', message: MESSAGES.invalidPhoneNumber }, (c) => c.makeCall(CALL_INPUT), 'invalid_phone_number'],
    ['unknown agent on 422', 422, { status: 'error', message: 'Invalid agent_id. The agent does not exist or is not active.' }, (c) => c.makeCall(CALL_INPUT), 'invalid_agent'],
    ['invalid per_page', 400, { status: 'error', message: MESSAGES.invalidPerPage }, (c) => c.listCalls({ perPage: 5000 }), 'invalid_per_page'],
    ['unknown 422 message', 422, { status: 'error', message: 'Something else' }, (c) => c.makeCall(CALL_INPUT), 'rejected'],
  ];
  it.each(cases)('%s', async (_name, status, body, run, code) => {
    const { client, server } = await setup((_req, res) => {
      if (typeof body === 'string') {
        res.writeHead(status, { 'content-type': 'text/html' });
        res.end(body);
      } else json(res, status, body);
    });
    const err = await gatewayError(run(client));
    expect(err.code).toBe(code);
    expect(err.retryable).toBe(false);
    expect(server.requests).toHaveLength(1);
    const message = (body as { message?: string }).message;
    if (code === 'rejected') expect(err.message).toBe(`gateway answered HTTP ${status} on ${err.endpoint}${message ? `: ${message}` : ''}`);
    else if (message !== undefined) expect(err.message).toBe(message);
  });
});

describe('make-call is not retried once it may have been sent', () => {
  it.each([
    ['503', ((_req, res) => json(res, 503, { status: 'error', message: 'down' })) as Handler, 'unavailable'],
    ['429', ((_req, res) => json(res, 429, { status: 'error', message: 'slow' }, { 'retry-after': '1' })) as Handler, 'rate_limited'],
    ['connection reset', ((req) => req.socket.destroy()) as Handler, 'unavailable'],
    ['timeout', (() => undefined) as Handler, 'unavailable'],
    ['malformed JSON', ((_req, res) => res.end('{')) as Handler, 'schema'],
  ])('%s', async (_name, handler, code) => {
    // 1 s: the timeout case waits for it; every other answer arrives well within it, even on a loaded machine.
    const { client, server, events } = await setup(handler, { timeoutMs: 1_000 });
    const err = await gatewayError(client.makeCall(CALL_INPUT));
    expect(err.code).toBe(code);
    expect(server.requests).toHaveLength(1);
    expect(events).toHaveLength(1);
  });

  it('is retried when the connection was refused (nothing was sent)', async () => {
    const { client: _unused, server: s } = await setup(() => undefined);
    const url = s.url;
    await client?.close();
    await s.close();
    server = undefined;
    const events: RequestEvent[] = [];
    client = createGatewayClient({ baseUrl: url, secretKey: KEY, clock: recordingClock(), onRequest: (e) => events.push(e) });
    const err = await gatewayError(client.makeCall(CALL_INPUT));
    expect(err.code).toBe('unavailable');
    expect(err.message).toMatch(/ECONNREFUSED/);
    expect(events.map((e) => e.attempt)).toEqual([1, 2, 3, 4]);
  });
});

describe('the secret key never leaks', () => {
  const echoKey: Handler = (req, res) =>
    json(res, 401, { status: 'error', message: `Unauthorized: key ${String(req.headers['account-secret-key'])} is invalid` });
  const failures: [string, Handler, (c: GatewayClient) => Promise<unknown>][] = [
    ['vendor message echoing the key', echoKey, (c) => c.listDevices()],
    ['connection reset', (req) => req.socket.destroy(), (c) => c.listDevices()],
    ['timeout', () => undefined, (c) => c.getDevice('SN-0001')],
    ['malformed JSON', (_req, res) => res.end('not json'), (c) => c.listCalls()],
    ['schema violation', (_req, res) => json(res, 200, { status: 'success', data: { call_id: 1 } }), (c) => c.getCall(1)],
    ['make-call reset', (req) => req.socket.destroy(), (c) => c.makeCall(CALL_INPUT)],
    ['bad argument', (_req, res) => json(res, 200, {}), (c) => c.makeCall({ ...CALL_INPUT, to: KEY })],
  ];
  it.each(failures)('%s', async (_name, handler, run) => {
    const { client } = await setup(handler, { timeoutMs: 100, retries: 1 });
    const err = await caught(() => run(client));
    expect(err).toBeInstanceOf(GatewayError);
    expect(deepText(err)).not.toContain(KEY);
  });

  it.each([
    ['a trailing newline (a secret file written with echo)', `${KEY}\n`],
    ['a character outside Latin-1', `${KEY}-€`],
  ])('with a key Node cannot send in a header (%s): unavailable at once, nothing sent, not retried', async (_name, key) => {
    const { client, server } = await setup((_req, res) => deviceList(res), { secretKey: key, retries: 2 });
    for (const run of [() => client.listDevices(), () => client.makeCall(CALL_INPUT)]) {
      const err = await caught(run);
      expect(err).toBeInstanceOf(GatewayError);
      expect(err).toMatchObject({ code: 'unavailable', retryable: false, message: expect.stringMatching(/^gateway unreachable \((device_list|make_call)\): Invalid character in header content \["account-secret-key"\]$/) });
      expect(deepText(err)).not.toContain(KEY);
    }
    expect(server.requests).toHaveLength(0);
  });

  it('on a refused connection', async () => {
    client = createGatewayClient({ baseUrl: 'http://127.0.0.1:1', secretKey: KEY, retries: 0 });
    const err = await caught(() => client!.listDevices());
    expect((err as GatewayError).code).toBe('unavailable');
    expect((err as GatewayError).cause).toBeInstanceOf(Error);
    expect(deepText(err)).not.toContain(KEY);
  });
});
