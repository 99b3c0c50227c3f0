/**
 * Black-box conformance of `boxwatch sim` to the vendor document (../shared/gateway-api-v1.md).
 *
 * The built CLI runs as a child process and is spoken to with global fetch only: no boxwatch code
 * is imported besides the build helper. Every assertion cites the section of the document it comes
 * from. Where the document says "not shown" (HTTP status codes, the page parameter, per_page
 * bounds) the suite asserts only what any reading allows (an error is a 4xx), or follows the
 * simulator's documented decision and says so.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { isIP } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MAIN, ROOT, ensureBuilt } from '../e2e/build.js';

const KEY = 'some-test-key';
const PREFIX = '/api/gateway/v1';

/** Section 7, word for word. */
const MSG = {
  unauthorized: 'Unauthorized. Missing or invalid account-secret-key',
  callNotFound: 'Call not found. Please check the call ID.',
  deviceNotFound: 'Device not found. Please verify the device_serial_id.',
  noDevices: 'No connected devices found for this account',
  invalidPerPage: 'Invalid per_page value',
} as const;

// ---------------------------------------------------------------- schemas of section 2 (strict)

/** "ISO 8601 timestamp in UTC" (sections 2 and 9). */
const isoUtc = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|\+00:00)$/, 'ISO 8601 UTC timestamp')
  .refine((s) => !Number.isNaN(Date.parse(s)), 'parseable timestamp');
const int = z.number().int();
/** "E.164 phone number" (plus sign, then up to 15 digits, no leading zero). */
const e164 = z.string().regex(/^\+[1-9]\d{1,14}$/);
/** "format box:<serial_no>". */
const boxFrom = z.string().regex(/^box:\S+$/);
/** call_id is a string, and the details path takes it as an integer (4.2). */
const callId = z.string().regex(/^\d+$/);
const callStatus = z.enum(['initiated', 'completed', 'failed']);

const deviceSummary = z.strictObject({
  id: int,
  serial_no: z.string().min(1),
  device_name: z.string(),
  connected: z.boolean(),
  battery_level: int.min(0).max(100).nullable(),
  last_seen: isoUtc,
  firmware_version: z.string().min(1),
});
const deviceRecord = deviceSummary.extend({
  signal_strength: int.max(0),
  registered_at: isoUtc,
  location: z.string(),
  ip_address: z.string().refine((s) => isIP(s) !== 0, 'an IP address'),
});
type DeviceSummary = z.infer<typeof deviceSummary>;

/**
 * Call summary (2). ended_at and duration_sec are optional here only because a call that is still
 * `initiated` has not ended; finished calls are checked to carry them (see finishedCallFields).
 */
const callSummary = z.strictObject({
  call_id: callId,
  status: callStatus,
  from: boxFrom,
  to: e164,
  agent_id: int,
  direction: z.literal('outbound'),
  started_at: isoUtc,
  ended_at: isoUtc.optional(),
  duration_sec: int.min(0).optional(),
});
const callRecord = callSummary.extend({
  audio_record_url: z.url({ protocol: /^https?$/ }).optional(),
  transcript: z.string().optional(),
  variables: z.record(z.string(), z.string()).optional(),
});
type CallSummary = z.infer<typeof callSummary>;
type CallRecord = z.infer<typeof callRecord>;

const meta = z.strictObject({ per_page: int.min(1), page: int.min(1), has_next: z.boolean() });
const errorEnvelope = z.strictObject({ status: z.literal('error'), message: z.string().min(1) });

const makeCallData = z.strictObject({
  call_id: callId,
  status: z.literal('initiated'),
  agent_id: int,
  from: boxFrom,
  to: e164,
});

// ---------------------------------------------------------------- child processes and HTTP

interface Sim {
  child: ChildProcess;
  base: string;
}
const children: ChildProcess[] = [];

/** Spawns `boxwatch sim --port 0 ...` and resolves with the URL of its one line of output. */
function startSim(extra: string[]): Promise<Sim> {
  const child = spawn(process.execPath, [MAIN, 'sim', '--port', '0', '--key', KEY, ...extra], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`sim did not start in time: ${out}${err}`)), 20_000);
    child.stderr?.on('data', (c: Buffer) => (err += c.toString()));
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /^gateway simulator listening on (http:\/\/\S+:\d+)\n/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve({ child, base: m[1] });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`sim exited with ${code}: ${out}${err}`));
    });
  });
}

interface Reply {
  status: number;
  contentType: string;
  body: unknown;
}

/** One request; the body must be JSON ("Every response is JSON", section 1). */
async function call(sim: Sim, path: string, init: RequestInit & { key?: string | null } = {}): Promise<Reply> {
  const { key = KEY, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (key !== null) headers.set('account-secret-key', key);
  const res = await fetch(`${sim.base}${PREFIX}${path}`, { ...rest, headers, signal: AbortSignal.timeout(5_000) });
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`${init.method ?? 'GET'} ${path}: not JSON (${res.status}): ${text.slice(0, 200)}`);
  }
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', body };
}

/** Asserts the success envelope (section 2) and returns data (and meta when present). */
function success(reply: Reply, withMeta = false): { data: unknown; meta?: unknown } {
  expect(reply.contentType).toMatch(/^application\/json/);
  expect(reply.status, JSON.stringify(reply.body)).toBeGreaterThanOrEqual(200);
  expect(reply.status).toBeLessThan(300);
  const shape = withMeta
    ? z.strictObject({ status: z.literal('success'), data: z.unknown(), meta })
    : z.strictObject({ status: z.literal('success'), data: z.unknown() });
  return shape.parse(reply.body);
}

/** Asserts the error envelope (sections 2 and 7) with a 4xx status, and returns the message. */
function failure(reply: Reply): string {
  expect(reply.contentType).toMatch(/^application\/json/);
  expect(reply.status, JSON.stringify(reply.body)).toBeGreaterThanOrEqual(400);
  expect(reply.status).toBeLessThan(500);
  return errorEnvelope.parse(reply.body).message;
}

function form(fields: Record<string, string>): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  return fd;
}

/** POST make-call as multipart/form-data (4.1); fetch sets the multipart boundary. */
function makeCall(sim: Sim, fields: Record<string, string>, key: string | null = KEY): Promise<Reply> {
  return call(sim, '/call/make-call', { method: 'POST', body: form(fields), key });
}

async function deviceList(sim: Sim): Promise<DeviceSummary[]> {
  return z.array(deviceSummary).parse(success(await call(sim, '/box/device-list')).data);
}

async function deviceDetails(sim: Sim, serial: string): Promise<z.infer<typeof deviceRecord>> {
  return deviceRecord.parse(success(await call(sim, `/box/device/${encodeURIComponent(serial)}`)).data);
}

async function callDetails(sim: Sim, id: string): Promise<CallRecord> {
  return callRecord.parse(success(await call(sim, `/call/${id}`)).data);
}

/**
 * All calls, walking pages with `page` (the page parameter is "not shown" in 4.3; `page` is the
 * simulator's decision and matches the name of meta.page).
 */
async function allCalls(sim: Sim, perPage: number): Promise<{ calls: CallSummary[]; pages: number }> {
  const calls: CallSummary[] = [];
  for (let page = 1; page <= 1000; page++) {
    const got = success(await call(sim, `/call/list?per_page=${perPage}&page=${page}`), true);
    const data = z.array(callSummary).parse(got.data);
    const m = meta.parse(got.meta);
    expect(m).toMatchObject({ per_page: perPage, page });
    expect(data.length).toBeLessThanOrEqual(perPage);
    calls.push(...data);
    if (!m.has_next) return { calls, pages: page };
    expect(data.length).toBe(perPage);
  }
  throw new Error('has_next never became false');
}

/** Finished calls carry the end of the call (2): ended_at not before started_at, duration_sec. */
function finishedCallFields(c: CallSummary): void {
  if (c.status === 'initiated') return;
  expect(c.ended_at, `call ${c.call_id} (${c.status}) has ended_at`).toBeDefined();
  expect(c.duration_sec, `call ${c.call_id} (${c.status}) has duration_sec`).toBeDefined();
  expect(Date.parse(c.ended_at ?? '')).toBeGreaterThanOrEqual(Date.parse(c.started_at));
}

// ---------------------------------------------------------------- the suite

let sim: Sim;
let empty: Sim;
let devices: DeviceSummary[];
let agentId: number;
let connectedSerial: string;

beforeAll(async () => {
  await ensureBuilt();
  // 200 boxes: enough for the fleet to hold some disconnected boxes (needed for the usage rule).
  [sim, empty] = await Promise.all([startSim(['--devices', '200']), startSim(['--devices', '0'])]);
  devices = await deviceList(sim);
  connectedSerial = devices.find((d) => d.connected)?.serial_no ?? '';
  expect(connectedSerial, 'the fleet has a connected box').not.toBe('');
  // Agents are known only by agent_id (2): take one from the call history that accepts a call.
  const { calls } = await allCalls(sim, 100);
  const agents = [...new Set(calls.map((c) => c.agent_id))];
  for (const agent of agents) {
    const reply = await makeCall(sim, { from: `box:${connectedSerial}`, to: '+14155550100', agent_id: String(agent) });
    if (reply.status < 300) {
      agentId = agent;
      break;
    }
  }
  expect(agentId, `one of the agents ${agents.join(', ')} accepts calls`).toBeDefined();
}, 120_000);

afterAll(async () => {
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
          child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
});

describe('5 + 7: authentication', () => {
  const endpoints: Array<[string, (key: string | null) => Promise<Reply>]> = [
    ['POST /call/make-call', (key) => makeCall(sim, { from: `box:${connectedSerial}`, to: '+14155550100', agent_id: String(agentId) }, key)],
    ['GET /call/{id}', (key) => call(sim, '/call/100001', { key })],
    ['GET /call/list', (key) => call(sim, '/call/list', { key })],
    ['GET /box/device-list', (key) => call(sim, '/box/device-list', { key })],
    ['GET /box/device/{serial}', (key) => call(sim, `/box/device/${connectedSerial}`, { key })],
  ];

  it.each(endpoints)('%s answers unauthorized without the header, with a wrong key and with an empty one', async (_name, request) => {
    for (const key of [null, 'wrong-key', '', KEY.toUpperCase(), `${KEY}x`]) {
      const reply = await request(key);
      expect(failure(reply), `key ${JSON.stringify(key)}`).toBe(MSG.unauthorized);
      expect(JSON.stringify(reply.body)).not.toContain(KEY);
    }
  });

  it('accepts the key only in the account-secret-key header (not as bearer token or query parameter)', async () => {
    expect(failure(await call(sim, '/box/device-list', { key: null, headers: { authorization: `Bearer ${KEY}` } }))).toBe(MSG.unauthorized);
    expect(failure(await call(sim, `/box/device-list?account-secret-key=${KEY}`, { key: null }))).toBe(MSG.unauthorized);
  });

  it('checks the key before validating the request', async () => {
    const bad = 'wrong-key';
    expect(failure(await makeCall(sim, { from: 'nope', to: 'nope', agent_id: 'x' }, bad))).toBe(MSG.unauthorized);
    expect(failure(await call(sim, '/call/list?per_page=abc', { key: bad }))).toBe(MSG.unauthorized);
    expect(failure(await call(sim, '/call/999999999', { key: bad }))).toBe(MSG.unauthorized);
    expect(failure(await call(sim, '/box/device/NO-SUCH-BOX', { key: bad }))).toBe(MSG.unauthorized);
    expect(failure(await call(empty, '/box/device-list', { key: bad }))).toBe(MSG.unauthorized);
  });
});

describe('4.4 list devices', () => {
  it('returns device summaries with exactly the documented fields and types', async () => {
    expect(devices.length).toBe(200);
    for (const d of devices) {
      for (const absent of ['signal_strength', 'registered_at', 'location', 'ip_address']) expect(d).not.toHaveProperty(absent);
    }
    expect(new Set(devices.map((d) => d.serial_no)).size).toBe(devices.length);
    expect(new Set(devices.map((d) => d.id)).size).toBe(devices.length);
  });

  it('reports battery_level null for disconnected boxes (the example of section 2)', () => {
    const disconnected = devices.filter((d) => !d.connected);
    expect(disconnected.length).toBeGreaterThan(0);
    for (const d of disconnected) expect(d.battery_level, d.serial_no).toBeNull();
    expect(devices.some((d) => d.connected && Number.isInteger(d.battery_level))).toBe(true);
  });

  it('answers "No connected devices found for this account" when the account has no box', async () => {
    expect(failure(await call(empty, '/box/device-list'))).toBe(MSG.noDevices);
  });
});

describe('4.5 get device details', () => {
  it('returns the full device record, consistent with the summary', async () => {
    const sample = [...devices.filter((d) => d.connected).slice(0, 3), ...devices.filter((d) => !d.connected).slice(0, 2)];
    for (const summary of sample) {
      const d = await deviceDetails(sim, summary.serial_no);
      expect(d).toMatchObject({ id: summary.id, serial_no: summary.serial_no, device_name: summary.device_name, firmware_version: summary.firmware_version });
      if (!d.connected) expect(d.battery_level).toBeNull();
      expect(Date.parse(d.registered_at)).toBeLessThanOrEqual(Date.parse(d.last_seen));
    }
  });

  it('answers "Device not found" for an unknown serial', async () => {
    for (const serial of ['NO-SUCH-BOX', `${connectedSerial}0`]) {
      expect(failure(await call(sim, `/box/device/${encodeURIComponent(serial)}`)), serial).toBe(MSG.deviceNotFound);
    }
  });
});

describe('4.3 list calls', () => {
  it('returns call summaries without the full-record fields, and pagination meta', async () => {
    const got = success(await call(sim, '/call/list'), true);
    const data = z.array(callSummary).parse(got.data);
    const m = meta.parse(got.meta);
    expect(m.page).toBe(1);
    expect(data.length).toBeLessThanOrEqual(m.per_page);
    expect(data.length).toBeGreaterThan(0);
    const serials = new Set(devices.map((d) => d.serial_no));
    for (const c of data) {
      for (const absent of ['audio_record_url', 'transcript', 'variables']) expect(c).not.toHaveProperty(absent);
      finishedCallFields(c);
      expect(serials.has(c.from.slice('box:'.length)), `${c.from} names a box of the account`).toBe(true);
    }
  });

  it('honours per_page and pages through every call exactly once, has_next false on the last page', async () => {
    const { calls: reference, pages } = await allCalls(sim, 100);
    const ids = reference.map((c) => c.call_id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(pages).toBe(Math.max(1, Math.ceil(ids.length / 100)));
    for (const perPage of [1, 7, ids.length]) {
      const { calls, pages: n } = await allCalls(sim, perPage);
      expect(calls.map((c) => c.call_id).sort(), `per_page=${perPage}`).toEqual([...ids].sort());
      expect(n).toBe(Math.ceil(ids.length / perPage));
    }
    const past = success(await call(sim, `/call/list?per_page=5&page=${Math.ceil(ids.length / 5) + 1}`), true);
    expect(past.data).toEqual([]);
    expect(meta.parse(past.meta).has_next).toBe(false);
  });

  it.each(['0', '-1', 'abc', '1.5', '2x'])('answers "Invalid per_page value" for per_page=%s', async (value) => {
    expect(failure(await call(sim, `/call/list?per_page=${encodeURIComponent(value)}`))).toBe(MSG.invalidPerPage);
  });
});

describe('4.2 get call details', () => {
  it('returns the full call record, consistent with the summary in the list', async () => {
    const { calls } = await allCalls(sim, 100);
    let withRecording = 0;
    for (const summary of calls.slice(0, 40)) {
      const c = await callDetails(sim, summary.call_id);
      const { call_id, from, to, agent_id, direction, started_at } = summary;
      expect(c).toMatchObject({ call_id, from, to, agent_id, direction, started_at });
      finishedCallFields(c);
      if (c.audio_record_url) {
        withRecording++;
        const res = await fetch(c.audio_record_url, { signal: AbortSignal.timeout(5_000) });
        expect(res.status, c.audio_record_url).toBe(200);
        expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(0);
      }
    }
    expect(withRecording, 'some call offers a recording').toBeGreaterThan(0);
  });

  it('answers "Call not found" for an unknown call id', async () => {
    expect(failure(await call(sim, '/call/999999999'))).toBe(MSG.callNotFound);
    expect(failure(await call(sim, '/call/0'))).toBe(MSG.callNotFound);
  });
});

describe('4.1 make a call', () => {
  it('accepts multipart/form-data, answers initiated with call_id, and the call can be looked up', async () => {
    const reply = await makeCall(sim, { from: `box:${connectedSerial}`, to: '+442071838750', agent_id: String(agentId) });
    const data = makeCallData.parse(success(reply).data);
    expect(data).toEqual({ call_id: data.call_id, status: 'initiated', agent_id: agentId, from: `box:${connectedSerial}`, to: '+442071838750' });

    const record = await callDetails(sim, data.call_id);
    expect(record).toMatchObject({ call_id: data.call_id, from: `box:${connectedSerial}`, to: '+442071838750', agent_id: agentId, direction: 'outbound' });
    expect(Math.abs(Date.parse(record.started_at) - Date.now())).toBeLessThan(5 * 60_000);

    const { calls } = await allCalls(sim, 100);
    expect(calls.find((c) => c.call_id === data.call_id)).toMatchObject({ from: `box:${connectedSerial}`, agent_id: agentId });
  });

  it('takes agent_id as a string form field and returns it as an integer', async () => {
    const data = makeCallData.parse(success(await makeCall(sim, { from: `box:${connectedSerial}`, to: '+14155550123', agent_id: `${agentId}` })).data);
    expect(data.agent_id).toBe(agentId);
    expect(typeof data.agent_id).toBe('number');
  });

  /** Section 7 describes the message: the serial is invalid; check the device menu of the dashboard. */
  function expectInvalidSerial(message: string): void {
    expect(message).toMatch(/invalid/i);
    expect(message).toMatch(/device serial/i);
    expect(message).toMatch(/devices? menu/i);
    expect(message).toMatch(/dashboard/i);
  }

  it('answers the invalid device serial message when from does not name a device of the account', async () => {
    const to = '+14155550100';
    const agent_id = String(agentId);
    for (const from of ['box:NO-SUCH-BOX', connectedSerial, `device:${connectedSerial}`, 'box:']) {
      expectInvalidSerial(failure(await makeCall(sim, { from, to, agent_id })));
    }
    expectInvalidSerial(failure(await makeCall(sim, { to, agent_id })));
  });

  it('refuses a call from a disconnected box with the invalid device serial message (usage rule of 4.5)', async () => {
    let checked = 0;
    for (const candidate of devices.filter((d) => !d.connected)) {
      if ((await deviceDetails(sim, candidate.serial_no)).connected) continue;
      const reply = await makeCall(sim, { from: `box:${candidate.serial_no}`, to: '+14155550100', agent_id: String(agentId) });
      // The fleet lives in real time: count the box only if it stayed disconnected throughout.
      if ((await deviceDetails(sim, candidate.serial_no)).connected) continue;
      expectInvalidSerial(failure(reply));
      checked++;
      if (checked === 2) break;
    }
    expect(checked, 'disconnected boxes tried').toBeGreaterThan(0);
  });

  it.each(['14155550100', '+1 415 555 0100', '+1-415-555-0100', '+1415555010a', '+0123456789', '+1234567890123456', '+', ''])(
    'answers the invalid phone number message (mentioning E.164) for to=%j',
    async (to) => {
      const message = failure(await makeCall(sim, { from: `box:${connectedSerial}`, to, agent_id: String(agentId) }));
      expect(message).toMatch(/invalid phone number/i);
      expect(message).toContain('E.164');
    },
  );

  it('answers the invalid phone number message when to is missing', async () => {
    const message = failure(await makeCall(sim, { from: `box:${connectedSerial}`, agent_id: String(agentId) }));
    expect(message).toMatch(/invalid phone number/i);
    expect(message).toContain('E.164');
  });

  it('refuses an unknown agent with an error envelope (message not shown in the document)', async () => {
    failure(await makeCall(sim, { from: `box:${connectedSerial}`, to: '+14155550100', agent_id: '987654321' }));
  });
});

describe('1: every response is JSON with a status field', () => {
  it('answers unknown paths and wrong methods with the error envelope', async () => {
    failure(await call(sim, '/no/such/endpoint'));
    failure(await call(sim, '/box/device-list', { method: 'POST' }));
    failure(await call(sim, '/call/make-call'));
  });
});

/**
 * Where the document says "not shown", the simulator made decisions (README, "Simulator
 * decisions"). These are not vendor contract; they pin the choices a client may rely on locally.
 */
describe('simulator decisions for what the document leaves open', () => {
  it('uses 401, 404, 422 and 400 for the errors of section 7, and 200 for success', async () => {
    const unknownBox = 'box:NO-SUCH-BOX';
    const fields = { from: `box:${connectedSerial}`, to: '+14155550100', agent_id: String(agentId) };
    const expected: Array<[Promise<Reply>, number]> = [
      [call(sim, '/box/device-list', { key: 'wrong-key' }), 401],
      [call(sim, '/call/999999999'), 404],
      [call(sim, '/box/device/NO-SUCH-BOX'), 404],
      [call(empty, '/box/device-list'), 404],
      [makeCall(sim, { ...fields, from: unknownBox }), 422],
      [makeCall(sim, { ...fields, to: '12345' }), 422],
      [makeCall(sim, { ...fields, agent_id: '987654321' }), 422],
      [call(sim, '/call/list?per_page=0'), 400],
      [call(sim, '/box/device-list'), 200],
      [call(sim, '/call/list'), 200],
    ];
    const statuses = await Promise.all(expected.map(async ([reply]) => (await reply).status));
    expect(statuses).toEqual(expected.map(([, status]) => status));
  });

  it('checks make-call fields in the order from, to, agent_id', async () => {
    expect(failure(await makeCall(sim, { from: 'box:NO-SUCH-BOX', to: 'bad', agent_id: '987654321' }))).toMatch(/device serial/);
    expect(failure(await makeCall(sim, { from: `box:${connectedSerial}`, to: 'bad', agent_id: '987654321' }))).toMatch(/phone number/);
  });

  it('pages with per_page default 20, between 1 and 100, and a 1-based page parameter', async () => {
    expect(meta.parse(success(await call(sim, '/call/list'), true).meta).per_page).toBe(20);
    expect(meta.parse(success(await call(sim, '/call/list?per_page=100'), true).meta).per_page).toBe(100);
    expect(failure(await call(sim, '/call/list?per_page=101'))).toBe(MSG.invalidPerPage);
    expect(failure(await call(sim, '/call/list?per_page='))).toBe(MSG.invalidPerPage);
    for (const page of ['0', '-1', 'x', '1.5']) expect(failure(await call(sim, `/call/list?page=${page}`))).toBe('Invalid page value');
  });

  it('lists calls newest first', async () => {
    const { calls } = await allCalls(sim, 100);
    const starts = calls.map((c) => Date.parse(c.started_at));
    expect(starts).toEqual([...starts].sort((a, b) => b - a));
  });
});
