/**
 * Contract suite: the gateway client against the simulator over real HTTP. Every endpoint, every
 * vendor error with its exact message and code, and the simulator's fault injection (5xx, 429
 * with Retry-After, reset, hang, malformed JSON, schema violations). Simulated time runs on a
 * FakeClock; the client's backoff sleeps are recorded and return at once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.js';
import { createGatewayClient, type GatewayClientOptions } from '../../src/gateway/client.js';
import { GatewayError } from '../../src/gateway/errors.js';
import { MESSAGES } from '../../src/gateway/messages.js';
import type { GatewayClient, RequestEvent } from '../../src/gateway/types.js';
import { SIM_MESSAGES } from '../../src/sim/messages.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import type { FaultSpec } from '../../src/sim/scenario.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { caught, deepText } from './leak.js';

const KEY = 'contract-test-secret-4b1d9e';
const START = '2026-03-01T12:00:00.000Z';
const ACTIVE_AGENT = 101;
const INACTIVE_AGENT = 105;

interface Harness {
  sim: RunningSimulator;
  simClock: FakeClock;
  client: GatewayClient;
  events: RequestEvent[];
  sleeps: number[];
  /** Serial of a connected box. */
  connected: string;
  inject(spec: FaultSpec): void;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function harness(options: { devices?: number; key?: string; client?: Partial<GatewayClientOptions> } = {}): Promise<Harness> {
  const simClock = new FakeClock(START);
  const sim = await startSimulator({ port: 0, key: KEY, devices: options.devices ?? 12, seed: 3, clock: simClock });
  cleanups.push(() => sim.close());
  const events: RequestEvent[] = [];
  const sleeps: number[] = [];
  const clientClock: Clock = {
    now: () => Date.now(),
    sleep: (ms) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
  };
  const client = createGatewayClient({
    baseUrl: sim.url,
    secretKey: options.key ?? KEY,
    clock: clientClock,
    timeoutMs: 2_000,
    onRequest: (e) => events.push(e),
    ...options.client,
  });
  cleanups.push(() => client.close());
  const connected = sim.sim.fleet.boxes.find((b) => b.connected)?.serial ?? '';
  return { sim, simClock, client, events, sleeps, connected, inject: (spec) => void sim.sim.inject(spec) };
}

async function gatewayError(promise: Promise<unknown>): Promise<GatewayError> {
  const err = await caught(() => promise);
  expect(err).toBeInstanceOf(GatewayError);
  return err as GatewayError;
}

const PHONE = '+14155550123';

describe('devices', () => {
  it('lists every box, with the gateway clock from the Date header', async () => {
    const h = await harness({ devices: 12 });
    const { devices, serverTime } = await h.client.listDevices();
    expect(devices.map((d) => d.serial_no)).toEqual(h.sim.sim.fleet.boxes.map((b) => b.serial));
    expect(serverTime).toBe(Date.parse(START)); // second precision; START is on a whole second
    for (const d of devices) expect(d.battery_level === null).toBe(!d.connected);
  });

  it('shows one device in full, consistent with the list', async () => {
    const h = await harness();
    const { devices } = await h.client.listDevices();
    const summary = devices.find((d) => d.serial_no === h.connected);
    const device = await h.client.getDevice(h.connected);
    expect(device).toMatchObject(summary ?? {});
    expect(device.signal_strength).toBeLessThan(0);
    expect(typeof device.location).toBe('string');
  });

  it('device not found: code and exact vendor message', async () => {
    const h = await harness();
    const err = await gatewayError(h.client.getDevice('NOPE-404'));
    expect(err).toMatchObject({ code: 'device_not_found', status: 404, message: MESSAGES.deviceNotFound, endpoint: 'device_details' });
  });

  it('no devices: code and exact vendor message', async () => {
    const h = await harness({ devices: 0 });
    const err = await gatewayError(h.client.listDevices());
    expect(err).toMatchObject({ code: 'no_devices', message: MESSAGES.noDevices, retryable: false });
  });
});

describe('calls', () => {
  it('places a call, reads it back, and sees it finish in simulated time', async () => {
    const h = await harness();
    const placed = await h.client.makeCall({ from: `box:${h.connected}`, to: PHONE, agentId: ACTIVE_AGENT });
    expect(placed).toMatchObject({ status: 'initiated', agent_id: ACTIVE_AGENT, from: `box:${h.connected}`, to: PHONE });
    expect(placed.call_id).toMatch(/^\d+$/);

    const initiated = await h.client.getCall(placed.call_id);
    expect(initiated).toMatchObject({ call_id: placed.call_id, status: 'initiated', direction: 'outbound' });

    h.simClock.advance(60 * 60_000);
    const done = await h.client.getCall(Number(placed.call_id));
    expect(['completed', 'failed']).toContain(done.status);
    expect(done.ended_at).toBeDefined();
    if (done.status === 'completed') expect(done.audio_record_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/recordings\//);

    const { items } = await h.client.listCalls();
    expect(items[0]?.call_id).toBe(placed.call_id); // newest first
  });

  it('pages through the call list with per_page and page', async () => {
    const h = await harness();
    const first = await h.client.listCalls({ perPage: 5 });
    expect(first.meta).toEqual({ per_page: 5, page: 1, has_next: true });
    expect(first.items).toHaveLength(5);
    const second = await h.client.listCalls({ perPage: 5, page: 2 });
    expect(second.meta.page).toBe(2);
    const ids = new Set([...first.items, ...second.items].map((c) => c.call_id));
    expect(ids.size).toBe(10);
    const all = await h.client.listCalls({ perPage: 100 });
    expect(all.meta.has_next).toBe(false);
    const starts = all.items.map((c) => Date.parse(c.started_at));
    expect(starts).toEqual([...starts].sort((a, b) => b - a));
  });

  it('invalid per_page: code and exact vendor message', async () => {
    const h = await harness();
    const err = await gatewayError(h.client.listCalls({ perPage: 100_000 }));
    expect(err).toMatchObject({ code: 'invalid_per_page', status: 400, message: MESSAGES.invalidPerPage });
  });

  it('call not found: code and exact vendor message', async () => {
    const h = await harness();
    const err = await gatewayError(h.client.getCall(99));
    expect(err).toMatchObject({ code: 'call_not_found', status: 404, message: MESSAGES.callNotFound });
  });

  it('invalid device serial for an unknown and for a disconnected box', async () => {
    const h = await harness();
    const unknown = await gatewayError(h.client.makeCall({ from: 'box:NOPE-1', to: PHONE, agentId: ACTIVE_AGENT }));
    expect(unknown).toMatchObject({ code: 'invalid_device_serial', message: MESSAGES.invalidDeviceSerial });
    const box = h.sim.sim.fleet.get(h.connected);
    if (!box) throw new Error('no box');
    h.sim.sim.fleet.apply([box], { kind: 'disconnect' });
    const off = await gatewayError(h.client.makeCall({ from: `box:${h.connected}`, to: PHONE, agentId: ACTIVE_AGENT }));
    expect(off).toMatchObject({ code: 'invalid_device_serial', message: MESSAGES.invalidDeviceSerial });
  });

  it.each([INACTIVE_AGENT, 999])('invalid agent %i', async (agentId) => {
    const h = await harness();
    const err = await gatewayError(h.client.makeCall({ from: `box:${h.connected}`, to: PHONE, agentId }));
    expect(err).toMatchObject({ code: 'invalid_agent', message: SIM_MESSAGES.invalidAgent });
  });

  it('refuses a bad phone number or origin before any request', async () => {
    const h = await harness();
    const before = h.sim.sim.calls.size;
    for (const input of [
      { from: `box:${h.connected}`, to: '0155512345', agentId: ACTIVE_AGENT },
      { from: h.connected, to: PHONE, agentId: ACTIVE_AGENT },
    ]) {
      expect((await gatewayError(h.client.makeCall(input))).code).toBe('invalid_argument');
    }
    expect(h.events).toEqual([]);
    expect(h.sim.sim.calls.size).toBe(before);
  });
});

describe('authentication', () => {
  it('answers unauthorized with the exact vendor message on every endpoint', async () => {
    const h = await harness({ key: 'wrong-key' });
    const runs: (() => Promise<unknown>)[] = [
      () => h.client.listDevices(),
      () => h.client.getDevice(h.connected),
      () => h.client.listCalls(),
      () => h.client.getCall(100_001),
      () => h.client.makeCall({ from: `box:${h.connected}`, to: PHONE, agentId: ACTIVE_AGENT }),
    ];
    for (const run of runs) {
      const err = await gatewayError(run());
      expect(err).toMatchObject({ code: 'unauthorized', status: 401, message: MESSAGES.unauthorized, retryable: false });
    }
    expect(h.events).toHaveLength(5); // not retried
  });

  it('turns unauthorized after the key is rotated', async () => {
    const h = await harness();
    await h.client.listDevices();
    h.sim.sim.rotateKey('the-new-key');
    expect((await gatewayError(h.client.listDevices())).code).toBe('unauthorized');
  });
});

describe('faults', () => {
  it('503 twice, then success', async () => {
    const h = await harness();
    h.inject({ status: 503, count: 2, endpoints: ['device_list'] });
    expect((await h.client.listDevices()).devices.length).toBeGreaterThan(0);
    expect(h.events.map((e) => e.outcome)).toEqual(['unavailable', 'unavailable', 'ok']);
  });

  it('429 with Retry-After, then success after waiting that long', async () => {
    const h = await harness();
    h.inject({ status: 429, retryAfterMs: 3000, count: 1 });
    await h.client.listCalls();
    expect(h.events.map((e) => e.outcome)).toEqual(['rate_limited', 'ok']);
    expect(h.sleeps).toEqual([3000]);
  });

  it('connection reset, then success', async () => {
    const h = await harness();
    h.inject({ reset: true, count: 1 });
    await h.client.getDevice(h.connected);
    expect(h.events.map((e) => e.outcome)).toEqual(['unavailable', 'ok']);
  });

  it('a hung request times out, then the retry succeeds', async () => {
    const h = await harness({ client: { timeoutMs: 1_000 } }); // the retry answers well within it, even on a loaded machine
    h.inject({ hang: true, count: 1 });
    await h.client.listDevices();
    expect(h.events.map((e) => e.outcome)).toEqual(['unavailable', 'ok']);
  });

  it('malformed JSON is retried; persistent malformed JSON is a schema error', async () => {
    const h = await harness({ client: { retries: 2 } });
    h.inject({ malformedJson: true, count: 1 });
    await h.client.listDevices();
    expect(h.events.map((e) => e.outcome)).toEqual(['schema', 'ok']);
    h.inject({ malformedJson: true });
    const err = await gatewayError(h.client.listDevices());
    expect(err).toMatchObject({ code: 'schema', retryable: true });
  });

  it('a schema-violating device-list record is set aside, naming its field; the others are used', async () => {
    const h = await harness();
    h.inject({ schemaViolation: true, endpoints: ['device_list'] });
    const result = await h.client.listDevices();
    expect(result.rejected).toEqual([{ index: 0, serial: null, problem: 'serial_no: expected string, received undefined' }]);
    expect(result.devices.length).toBeGreaterThan(0);
    expect(h.events).toHaveLength(1);
  });

  it.each([
    ['device_details', (c: GatewayClient, serial: string) => c.getDevice(serial), 'data.battery_level: expected number'],
    ['call_list', (c: GatewayClient) => c.listCalls(), 'meta.has_next: expected boolean'],
    ['call_details', (c: GatewayClient) => c.getCall(100_001), 'data.agent_id: expected number'],
  ] as const)('schema violation on %s names the field and is not retried', async (endpoint, run, path) => {
    const h = await harness();
    h.inject({ schemaViolation: true, endpoints: [endpoint] });
    const err = await gatewayError(run(h.client, h.connected));
    expect(err).toMatchObject({ code: 'schema', retryable: false, endpoint });
    expect(err.message).toContain(path);
    expect(h.events).toHaveLength(1);
  });

  it.each([
    ['503', { status: 503 }, 'unavailable'],
    ['429', { status: 429, retryAfterMs: 1000 }, 'rate_limited'],
    ['reset', { reset: true }, 'unavailable'],
    ['hang', { hang: true }, 'unavailable'],
  ] as const)('make-call is not retried after %s', async (_name, spec, code) => {
    const h = await harness({ client: { timeoutMs: 1_000 } }); // a 429 must be read as one, not time out, on a loaded machine
    h.inject({ ...spec, endpoints: ['make_call'] });
    const err = await gatewayError(h.client.makeCall({ from: `box:${h.connected}`, to: PHONE, agentId: ACTIVE_AGENT }));
    expect(err.code).toBe(code);
    expect(h.events).toHaveLength(1);
  });

  it('never leaks the key in errors from the simulator', async () => {
    const h = await harness({ client: { timeoutMs: 200, retries: 1 } });
    const errors: unknown[] = [];
    for (const spec of [{ reset: true }, { malformedJson: true }, { hang: true }, { status: 500 }] as FaultSpec[]) {
      h.sim.sim.clearFaults();
      h.inject(spec);
      errors.push(await caught(() => h.client.listDevices()));
    }
    h.sim.sim.clearFaults();
    h.inject({ schemaViolation: true });
    errors.push(await caught(() => h.client.getDevice(h.connected)));
    h.sim.sim.clearFaults();
    h.sim.sim.rotateKey('other');
    errors.push(await caught(() => h.client.getDevice(h.connected)));
    for (const err of errors) {
      expect(err).toBeInstanceOf(GatewayError);
      expect(deepText(err)).not.toContain(KEY);
    }
  });
});
