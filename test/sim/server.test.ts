import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MESSAGES } from '../../src/gateway/messages.js';
import {
  callListEnvelopeSchema,
  callSchema,
  deviceSchema,
  deviceSummarySchema,
  makeCallResultSchema,
  successEnvelope,
} from '../../src/gateway/schemas.js';
import { SIM_MESSAGES } from '../../src/sim/messages.js';
import { KEY, START, json, startTestSim } from './helpers.js';

const errorBody = (message: string) => ({ status: 'error', message });

describe('simulator HTTP API: authentication', () => {
  it.each([
    ['missing', null],
    ['empty', ''],
    ['wrong', 'not-the-key'],
  ])('answers 401 with the vendor message when the key is %s, on every endpoint', async (_label, key) => {
    const sim = await startTestSim();
    for (const path of ['/box/device-list', '/box/device/BX-00001', '/call/list', '/call/100001']) {
      const res = await sim.get(path, key);
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual(errorBody(MESSAGES.unauthorized));
    }
    const res = await sim.makeCall({ from: 'box:BX-00001', to: '+14155550123', agent_id: '101' }, key ?? '');
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual(errorBody(MESSAGES.unauthorized));
  });
});

describe('simulator HTTP API: devices', () => {
  it('lists every box as a device summary with the documented fields only', async () => {
    const sim = await startTestSim({ devices: 20 });
    const res = await sim.get('/box/device-list');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = successEnvelope(z.array(deviceSummarySchema)).parse(await res.json());
    expect(body.data).toHaveLength(20);
    expect(Object.keys(body.data[0] ?? {}).sort()).toEqual(
      ['battery_level', 'connected', 'device_name', 'firmware_version', 'id', 'last_seen', 'serial_no'].sort(),
    );
    expect(new Set(body.data.map((d) => d.serial_no)).size).toBe(20);
    for (const d of body.data) expect(d.battery_level === null).toBe(!d.connected);
  });

  it('shows the full device record, matching the summary', async () => {
    const sim = await startTestSim();
    const list = successEnvelope(z.array(deviceSummarySchema)).parse(await (await sim.get('/box/device-list')).json());
    const first = list.data[0];
    if (!first) throw new Error('empty fleet');
    const res = await sim.get(`/box/device/${encodeURIComponent(first.serial_no)}`);
    expect(res.status).toBe(200);
    const { data } = successEnvelope(deviceSchema).parse(await res.json());
    expect(data).toMatchObject(first);
    expect(data.signal_strength).toBeLessThan(0);
    expect(data.ip_address).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(Date.parse(data.registered_at)).toBeLessThan(Date.parse(START));
  });

  it('answers 404 with the vendor message for an unknown serial', async () => {
    const sim = await startTestSim();
    const res = await sim.get('/box/device/NOPE-1');
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual(errorBody(MESSAGES.deviceNotFound));
  });

  it('answers 404 "no devices" when the account has no boxes', async () => {
    const sim = await startTestSim({ devices: 0 });
    const res = await sim.get('/box/device-list');
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual(errorBody(MESSAGES.noDevices));
  });

  it('carries 10,000 boxes and serves the list and details', async () => {
    const sim = await startTestSim({ devices: 10_000 });
    const body = successEnvelope(z.array(deviceSummarySchema)).parse(await (await sim.get('/box/device-list')).json());
    expect(body.data).toHaveLength(10_000);
    expect(body.data.at(-1)?.serial_no).toBe('BX-10000');
    const res = await sim.get('/box/device/BX-09999');
    expect(successEnvelope(deviceSchema).parse(await res.json()).data.serial_no).toBe('BX-09999');
  });

  it('sends simulated time in the Date header and moves the fleet with it', async () => {
    const sim = await startTestSim({ speed: 60 });
    const before = await sim.get('/box/device/BX-00001');
    expect(before.headers.get('date')).toBe(new Date(START).toUTCString());
    sim.clock.advance(60_000); // one real minute at speed 60 is one simulated hour
    const after = await sim.get('/box/device/BX-00001');
    expect(after.headers.get('date')).toBe(new Date(Date.parse(START) + 3_600_000).toUTCString());
    const a = successEnvelope(deviceSchema).parse(await before.json()).data;
    const b = successEnvelope(deviceSchema).parse(await after.json()).data;
    expect(b).not.toEqual(a);
  });
});

describe('simulator HTTP API: calls', () => {
  async function connectedSerial(sim: Awaited<ReturnType<typeof startTestSim>>): Promise<string> {
    const box = sim.sim.fleet.boxes.find((b) => b.connected);
    if (!box) throw new Error('no connected box');
    return box.serial;
  }

  it('places a call from a connected box (multipart form) and returns it as initiated', async () => {
    const sim = await startTestSim();
    const serial = await connectedSerial(sim);
    const res = await sim.makeCall({ from: `box:${serial}`, to: '+14155550123', agent_id: '101' });
    expect(res.status).toBe(200);
    const { data } = successEnvelope(makeCallResultSchema).parse(await res.json());
    expect(data).toEqual({ call_id: expect.stringMatching(/^\d+$/), status: 'initiated', agent_id: 101, from: `box:${serial}`, to: '+14155550123' });

    const details = successEnvelope(callSchema).parse(await (await sim.get(`/call/${data.call_id}`)).json()).data;
    expect(details).toMatchObject({ call_id: data.call_id, status: 'initiated', direction: 'outbound', agent_id: 101, started_at: START });
    expect(details.ended_at).toBeUndefined();
    expect(details.audio_record_url).toBeUndefined();
  });

  it('accepts agent_id as text and a urlencoded form as well', async () => {
    const sim = await startTestSim();
    const serial = await connectedSerial(sim);
    const res = await fetch(`${sim.url}/api/gateway/v1/call/make-call`, {
      method: 'POST',
      headers: { 'account-secret-key': KEY },
      body: new URLSearchParams({ from: `box:${serial}`, to: '+33612345678', agent_id: '102' }),
    });
    expect(res.status).toBe(200);
    expect((await json(res)).data).toMatchObject({ agent_id: 102, status: 'initiated' });
  });

  it.each([
    ['an unknown box', { from: 'box:BX-99999', to: '+14155550123', agent_id: '101' }, MESSAGES.invalidDeviceSerial],
    ['a from without box:', { from: 'BX-00001', to: '+14155550123', agent_id: '101' }, MESSAGES.invalidDeviceSerial],
    ['a missing from', { to: '+14155550123', agent_id: '101' }, MESSAGES.invalidDeviceSerial],
    ['a number without +', { from: 'box:$CONNECTED', to: '14155550123', agent_id: '101' }, MESSAGES.invalidPhoneNumber],
    ['a too short number', { from: 'box:$CONNECTED', to: '+1234567', agent_id: '101' }, MESSAGES.invalidPhoneNumber],
    ['a missing to', { from: 'box:$CONNECTED', agent_id: '101' }, MESSAGES.invalidPhoneNumber],
    ['an unknown agent', { from: 'box:$CONNECTED', to: '+14155550123', agent_id: '999' }, SIM_MESSAGES.invalidAgent],
    ['an inactive agent', { from: 'box:$CONNECTED', to: '+14155550123', agent_id: '105' }, SIM_MESSAGES.invalidAgent],
    ['a non-numeric agent', { from: 'box:$CONNECTED', to: '+14155550123', agent_id: 'abc' }, SIM_MESSAGES.invalidAgent],
  ])('refuses %s with 422 and the exact message', async (_label, fields: Record<string, string>, message) => {
    const sim = await startTestSim();
    const serial = await connectedSerial(sim);
    const filled = Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, v.replace('$CONNECTED', serial)]));
    const before = sim.sim.calls.size;
    const res = await sim.makeCall(filled);
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual(errorBody(message));
    expect(sim.sim.calls.size).toBe(before);
  });

  it('refuses a disconnected box of the account as an invalid device serial', async () => {
    const sim = await startTestSim();
    const serial = await connectedSerial(sim);
    sim.sim.fleet.apply([sim.sim.fleet.get(serial)!], { kind: 'disconnect' });
    const res = await sim.makeCall({ from: `box:${serial}`, to: '+14155550123', agent_id: '101' });
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual(errorBody(MESSAGES.invalidDeviceSerial));
  });

  it('refuses a JSON body with 415 rather than guessing', async () => {
    const sim = await startTestSim();
    const res = await fetch(`${sim.url}/api/gateway/v1/call/make-call`, {
      method: 'POST',
      headers: { 'account-secret-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ from: 'box:BX-00001', to: '+14155550123', agent_id: 101 }),
    });
    expect(res.status).toBe(415);
    expect(await res.json()).toEqual(errorBody(SIM_MESSAGES.unsupportedMediaType));
  });

  it('completes a call with duration, recording, transcript and variables; the recording expires', async () => {
    const sim = await startTestSim({ recordingTtlMs: 600_000 });
    const serial = await connectedSerial(sim);
    sim.sim.fleet.apply([sim.sim.fleet.get(serial)!], { kind: 'signal', dbm: -60 });
    // Strong signal: place calls with the transcribing agent until one completes.
    let completed: z.infer<typeof callSchema> | undefined;
    for (let i = 0; i < 10 && !completed; i++) {
      const made = successEnvelope(makeCallResultSchema).parse(await (await sim.makeCall({ from: `box:${serial}`, to: '+14155550123', agent_id: '101' })).json());
      sim.clock.advance(300_000); // longer than any simulated call
      const call = successEnvelope(callSchema).parse(await (await sim.get(`/call/${made.data.call_id}`)).json()).data;
      expect(['completed', 'failed']).toContain(call.status);
      if (call.status === 'completed') completed = call;
    }
    if (!completed) throw new Error('no call completed');
    expect(completed.duration_sec).toBeGreaterThan(0);
    expect(Date.parse(completed.ended_at ?? '')).toBeGreaterThan(Date.parse(completed.started_at));
    expect(completed.transcript).toMatch(/Agent:/);
    expect(completed.variables).toEqual(expect.objectContaining({ customer_ref: expect.any(String) }));
    const url = completed.audio_record_url ?? '';
    expect(url.startsWith(`${sim.url}/recordings/`)).toBe(true);

    const audio = await fetch(url);
    expect(audio.status).toBe(200);
    expect(audio.headers.get('content-type')).toBe('audio/wav');
    expect(Buffer.from(await audio.arrayBuffer()).subarray(0, 4).toString('ascii')).toBe('RIFF');

    sim.clock.advance(600_000);
    expect((await fetch(url)).status).toBe(404);
    const later = successEnvelope(callSchema).parse(await (await sim.get(`/call/${completed.call_id}`)).json()).data;
    expect(later.status).toBe('completed');
    expect(later.audio_record_url).toBeUndefined();
  });

  it('gives no transcript when the agent does not transcribe', async () => {
    const sim = await startTestSim();
    const serial = await connectedSerial(sim);
    sim.sim.fleet.apply([sim.sim.fleet.get(serial)!], { kind: 'signal', dbm: -60 });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const made = successEnvelope(makeCallResultSchema).parse(await (await sim.makeCall({ from: `box:${serial}`, to: '+14155550123', agent_id: '102' })).json());
      ids.push(made.data.call_id);
    }
    sim.clock.advance(300_000);
    const statuses: string[] = [];
    for (const id of ids) {
      const call = successEnvelope(callSchema).parse(await (await sim.get(`/call/${id}`)).json()).data;
      statuses.push(call.status);
      expect(call.transcript).toBeUndefined();
    }
    expect(statuses).toContain('completed');
  });

  it('fails calls far more often on a box with weak signal', async () => {
    const sim = await startTestSim();
    const [weak, strong] = sim.sim.fleet.boxes.filter((b) => b.connected);
    if (!weak || !strong) throw new Error('need two connected boxes');
    sim.sim.fleet.apply([weak], { kind: 'signal', dbm: -118 });
    sim.sim.fleet.apply([strong], { kind: 'signal', dbm: -60 });
    const failures = async (serial: string): Promise<number> => {
      const ids: string[] = [];
      for (let i = 0; i < 30; i++) {
        const made = successEnvelope(makeCallResultSchema).parse(await (await sim.makeCall({ from: `box:${serial}`, to: '+14155550123', agent_id: '103' })).json());
        ids.push(made.data.call_id);
      }
      sim.clock.advance(300_000);
      let failed = 0;
      for (const id of ids) {
        const call = successEnvelope(callSchema).parse(await (await sim.get(`/call/${id}`)).json()).data;
        if (call.status === 'failed') failed += 1;
      }
      return failed;
    };
    const weakFailures = await failures(weak.serial);
    const strongFailures = await failures(strong.serial);
    expect(weakFailures).toBeGreaterThan(12);
    expect(strongFailures).toBeLessThan(8);
  });

  it('answers 404 with the vendor message for an unknown or non-numeric call id', async () => {
    const sim = await startTestSim();
    for (const id of ['999999', 'abc', '-1']) {
      const res = await sim.get(`/call/${id}`);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual(errorBody(MESSAGES.callNotFound));
    }
  });

  it('pages the call list newest first with per_page, page and has_next', async () => {
    const sim = await startTestSim({ historyCalls: 45 });
    const first = callListEnvelopeSchema.parse(await (await sim.get('/call/list')).json());
    expect(first.meta).toEqual({ per_page: 20, page: 1, has_next: true });
    expect(first.data).toHaveLength(20);
    expect(Object.keys(first.data[0] ?? {})).not.toContain('variables');

    const all: string[] = [];
    for (let page = 1; ; page++) {
      const body = callListEnvelopeSchema.parse(await (await sim.get(`/call/list?per_page=10&page=${page}`)).json());
      expect(body.meta.page).toBe(page);
      expect(body.meta.per_page).toBe(10);
      all.push(...body.data.map((c) => c.started_at));
      if (!body.meta.has_next) break;
    }
    expect(all).toHaveLength(45);
    expect([...all].sort().reverse()).toEqual(all);

    const beyond = callListEnvelopeSchema.parse(await (await sim.get('/call/list?per_page=100&page=2')).json());
    expect(beyond.data).toEqual([]);
    expect(beyond.meta.has_next).toBe(false);
  });

  it('puts a new call first in the list', async () => {
    const sim = await startTestSim();
    const serial = await connectedSerial(sim);
    sim.clock.advance(1000);
    const made = successEnvelope(makeCallResultSchema).parse(await (await sim.makeCall({ from: `box:${serial}`, to: '+14155550123', agent_id: '104' })).json());
    const list = callListEnvelopeSchema.parse(await (await sim.get('/call/list?per_page=1')).json());
    expect(list.data[0]?.call_id).toBe(made.data.call_id);
  });

  it.each(['0', '101', 'abc', '', '1.5', '-3'])('answers 400 "Invalid per_page value" for per_page=%j', async (value) => {
    const sim = await startTestSim();
    const res = await sim.get(`/call/list?per_page=${value}`);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual(errorBody(MESSAGES.invalidPerPage));
  });

  it('accepts per_page from 1 to 100', async () => {
    const sim = await startTestSim({ historyCalls: 120 });
    for (const n of [1, 100]) {
      const body = callListEnvelopeSchema.parse(await (await sim.get(`/call/list?per_page=${n}`)).json());
      expect(body.data).toHaveLength(n);
    }
  });

  it('answers 400 for an invalid page', async () => {
    const sim = await startTestSim();
    const res = await sim.get('/call/list?page=0');
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual(errorBody(SIM_MESSAGES.invalidPage));
  });
});

describe('simulator HTTP API: routing', () => {
  it('answers 404 for unknown paths and 405 for a wrong method, in the envelope', async () => {
    const sim = await startTestSim();
    const unknown = await sim.get('/box/unknown');
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual(errorBody(SIM_MESSAGES.notFound));
    const wrong = await sim.get('/call/make-call');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
    expect(await wrong.json()).toEqual(errorBody(SIM_MESSAGES.methodNotAllowed));
  });
});
