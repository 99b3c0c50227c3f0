import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError } from '../../src/errors.js';
import { MESSAGES } from '../../src/gateway/messages.js';
import { deviceSchema, successEnvelope } from '../../src/gateway/schemas.js';
import { loadScenario, parseScenario } from '../../src/sim/scenario.js';
import { SIM_MESSAGES } from '../../src/sim/messages.js';
import { Simulator } from '../../src/sim/simulator.js';
import { KEY, startTestSim } from './helpers.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/outage.yaml', import.meta.url));
const S = 1000;
const M = 60 * S;

function issuesOf(fn: () => unknown): { path: string; message: string }[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.issues;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('scenario files', () => {
  it('parses the timeline, defaults and fault windows', async () => {
    const scenario = await loadScenario(FIXTURE);
    expect(scenario).toMatchObject({ devices: 30, seed: 4 });
    expect(scenario.events.map((e) => e.at)).toEqual([30 * S, 2 * M, 4 * M, 5 * M, 6 * M, 7 * M, 12 * M, 15 * M, 21 * M]);
    expect(scenario.faults).toEqual([
      { from: 3 * M, to: 3 * M + 20 * S, status: 503 },
      { from: 8 * M, to: 9 * M, status: 429, retryAfterMs: 5 * S },
      { from: 9 * M, to: 10 * M, endpoints: ['device_list'], malformedJson: true },
      { from: 10 * M, to: 11 * M, endpoints: ['device_details'], schemaViolation: true },
    ]);
  });

  it.each([
    ['timeline:\n  - at: soon\n    box: BX-00001\n    disconnect: true\n', 'timeline[0].at', /duration/],
    ['timeline:\n  - at: 1m\n    box: BX-00001\n', 'timeline[0]', /needs one of/],
    ['timeline:\n  - at: 1m\n    box: BX-00001\n    battery: 140\n', 'timeline[0].battery', /100/],
    ['timeline:\n  - at: 1m\n    box: BX-00001\n    battery: 10\n    for: 1m\n', 'timeline[0].for', /applies to disconnect, stale/],
    ['timeline:\n  - from: 1m\n    to: 30s\n    status: 503\n', 'timeline[0].to', /after/],
    ['timeline:\n  - from: 1m\n    status: 500\n    retry_after: 5s\n', 'timeline[0].retry_after', /429 or 503/],
    ['timeline:\n  - from: 1m\n    status: 429\n    endpoints: [devices]\n', 'timeline[0].endpoints[0]', /./],
    ['timeline:\n  - at: 1m\n    battery: 5\n', 'timeline[0].battery', /box or location/],
    ['timeline:\n  - at: 1m\n    box: BX-00001\n    disconnect: true\n    colour: red\n', 'timeline[0]', /colour/],
    ['speed: -1\n', 'speed', /./],
    ['timeline: [\n', 'line 2, column 1', /Flow sequence/], // the one YAML reader: line and column
  ])('rejects %j naming the field', (text, path, message) => {
    const issues = issuesOf(() => parseScenario(text));
    expect(issues).toContainEqual({ path, message: expect.stringMatching(message) });
  });

  it('accepts the example of docs/simulator.md', () => {
    const doc = readFileSync(fileURLToPath(new URL('../../docs/simulator.md', import.meta.url)), 'utf8');
    const example = /```yaml\n([\s\S]*?)```/.exec(doc)?.[1] ?? '';
    const scenario = parseScenario(example);
    expect(scenario.events.length).toBeGreaterThan(5);
    expect(scenario.faults.length).toBeGreaterThan(5);
  });

  it('rejects a target that matches no box of the fleet', async () => {
    const scenario = parseScenario('timeline:\n  - at: 1m\n    box: XX-1\n    disconnect: true\n');
    const issues = issuesOf(() => new Simulator({ devices: 5, scenario }));
    expect(issues).toEqual([{ path: 'timeline[0].box', message: 'matches no box (serials are BX-00001 to BX-00005)' }]);
  });

  it('reports a missing file as a configuration problem', async () => {
    await expect(loadScenario('/nonexistent/scenario.yaml')).rejects.toThrow(/file not found/);
  });

  it('does not put the rotated key into error messages', () => {
    const issues = issuesOf(() => parseScenario('timeline:\n  - rotate_key: super-secret-value\n'));
    expect(JSON.stringify(issues)).not.toContain('super-secret-value');
  });
});

describe('scenario timeline over HTTP', () => {
  async function device(sim: Awaited<ReturnType<typeof startTestSim>>, serial: string, key = KEY) {
    const res = await sim.get(`/box/device/${serial}`, key);
    return successEnvelope(deviceSchema).parse(await res.json()).data;
  }
  async function devices(sim: Awaited<ReturnType<typeof startTestSim>>, key = KEY) {
    return successEnvelope(z.array(z.looseObject({ serial_no: z.string(), connected: z.boolean() }))).parse(await (await sim.get('/box/device-list', key)).json()).data;
  }

  it('plays box events, fault windows and key rotation at their simulated times', async () => {
    const scenario = await loadScenario(FIXTURE);
    const sim = await startTestSim({ scenario, speed: 60 });
    // speed 60: one real second is one simulated minute
    const startReal = sim.clock.now();
    const goTo = (simMs: number): void => sim.clock.set(startReal + simMs / 60);

    expect(await devices(sim)).toHaveLength(30);
    goTo(29 * S);
    expect((await device(sim, 'BX-00003')).connected).toBe(true);
    goTo(30 * S);
    const down = await device(sim, 'BX-00003');
    expect(down.connected).toBe(false);
    expect(down.battery_level).toBeNull();

    goTo(2 * M);
    expect((await device(sim, 'BX-00007')).battery_level).toBe(12);

    goTo(3 * M + 5 * S);
    const unavailable = await sim.get('/box/device-list');
    expect(unavailable.status).toBe(503);
    expect(await unavailable.json()).toEqual({ status: 'error', message: SIM_MESSAGES.unavailable });
    goTo(3 * M + 20 * S);
    expect((await sim.get('/box/device-list')).status).toBe(200);

    goTo(4 * M);
    expect((await device(sim, 'BX-00003')).connected).toBe(true); // held down until the connect event

    goTo(5 * M);
    const list = await devices(sim);
    const group = list.filter((d) => /^BX-0001\d$/.test(d.serial_no));
    expect(group.map((d) => d.connected)).toEqual(Array(10).fill(false));
    goTo(6 * M);
    const staleStart = await device(sim, 'BX-00020');
    // The key rotates at 12m (scenario): from then on the new key is needed.
    goTo(15 * M);
    expect((await devices(sim, 'rotated-key')).filter((d) => /^BX-0001\d$/.test(d.serial_no)).every((d) => d.connected)).toBe(true);
    goTo(20 * M);
    const stillStale = await device(sim, 'BX-00020', 'rotated-key');
    expect(stillStale.connected).toBe(true);
    expect(stillStale.last_seen).toBe(staleStart.last_seen);
    goTo(21 * M + 10 * S);
    const awake = await device(sim, 'BX-00020', 'rotated-key');
    expect(Date.parse(awake.last_seen)).toBeGreaterThan(Date.parse(stillStale.last_seen));

  });

  it('answers 429 with Retry-After, malformed JSON and schema violations inside their windows', async () => {
    const scenario = await loadScenario(FIXTURE);
    const sim = await startTestSim({ scenario, speed: 60 });
    const startReal = sim.clock.now();
    const goTo = (simMs: number): void => sim.clock.set(startReal + simMs / 60);

    goTo(7 * M + 10 * S);
    expect((await device(sim, 'BX-00021')).signal_strength).toBeLessThanOrEqual(-100);

    goTo(8 * M + 30 * S);
    const limited = await sim.get('/call/list');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('5');
    expect(await limited.json()).toEqual({ status: 'error', message: SIM_MESSAGES.rateLimited });

    goTo(9 * M + 30 * S);
    const malformed = await sim.get('/box/device-list');
    expect(malformed.status).toBe(200);
    await expect(malformed.json()).rejects.toThrow();
    expect((await sim.get('/box/device/BX-00001')).status).toBe(200); // other endpoints unaffected

    goTo(10 * M + 30 * S);
    const violating = await (await sim.get('/box/device/BX-00001')).json();
    const parsed = successEnvelope(deviceSchema).safeParse(violating);
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.path).toEqual(['data', 'battery_level']);

    goTo(12 * M + 30 * S);
    expect((await sim.get('/box/device/BX-00001', KEY)).status).toBe(200); // old key in its grace minute
    expect((await sim.get('/box/device/BX-00001', 'rotated-key')).status).toBe(200);
    goTo(13 * M);
    const rejected = await sim.get('/box/device/BX-00001', KEY);
    expect(rejected.status).toBe(401);
    expect(await rejected.json()).toEqual({ status: 'error', message: MESSAGES.unauthorized });
    expect((await sim.get('/box/device/BX-00001', 'rotated-key')).status).toBe(200);
  });

  it('disconnects every box of a location', async () => {
    const probe = new Simulator({ devices: 40, seed: 2 });
    const location = probe.fleet.boxes[0]?.location ?? '';
    const members = probe.fleet.boxes.filter((b) => b.location === location).map((b) => b.serial);
    const scenario = parseScenario(`timeline:\n  - at: 1m\n    location: ${JSON.stringify(location)}\n    disconnect: true\n`);
    const sim = await startTestSim({ scenario, devices: 40, seed: 2 });
    sim.clock.advance(M);
    const list = await devices(sim);
    expect(list.filter((d) => members.includes(d.serial_no)).every((d) => !d.connected)).toBe(true);
    expect(list.filter((d) => !members.includes(d.serial_no)).some((d) => d.connected)).toBe(true);
  });
});
