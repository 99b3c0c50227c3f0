import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { callListEnvelopeSchema, callSchema, deviceSchema, deviceSummarySchema, makeCallResultSchema, successEnvelope } from '../../src/gateway/schemas.js';
import { SIM_MESSAGES } from '../../src/sim/messages.js';
import { startTestSim } from './helpers.js';

describe('fault injection', () => {
  it('fails the first request with 503 and then answers normally (count)', async () => {
    const sim = await startTestSim();
    sim.sim.inject({ status: 503, count: 1, endpoints: ['device_list'] });
    const first = await sim.get('/box/device-list');
    expect(first.status).toBe(503);
    expect(await first.json()).toEqual({ status: 'error', message: SIM_MESSAGES.unavailable });
    expect((await sim.get('/box/device-list')).status).toBe(200);
  });

  it('answers 429 with a Retry-After header in whole seconds', async () => {
    const sim = await startTestSim();
    sim.sim.inject({ status: 429, retryAfterMs: 1500 });
    const res = await sim.get('/call/list');
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('2');
    expect(await res.json()).toEqual({ status: 'error', message: SIM_MESSAGES.rateLimited });
  });

  it('answers faults before checking the key, like a proxy in front of the service', async () => {
    const sim = await startTestSim();
    sim.sim.inject({ status: 502 });
    expect((await sim.get('/box/device-list', null)).status).toBe(502);
  });

  it('sends truncated JSON when malformed_json is on', async () => {
    const sim = await startTestSim();
    sim.sim.inject({ malformedJson: true });
    const res = await sim.get('/box/device/BX-00001');
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.startsWith('{"status":"success"')).toBe(true);
    expect(() => JSON.parse(text) as unknown).toThrow();
  });

  it('breaks the documented schema on every endpoint, naming a field path', async () => {
    const sim = await startTestSim();
    const serial = sim.sim.fleet.boxes.find((b) => b.connected)?.serial ?? '';
    const made = successEnvelope(makeCallResultSchema).parse(await (await sim.makeCall({ from: `box:${serial}`, to: '+14155550123', agent_id: '101' })).json());
    sim.sim.inject({ schemaViolation: true });
    const cases: [string, z.ZodType, (string | number)[]][] = [
      ['/box/device-list', successEnvelope(z.array(deviceSummarySchema)), ['data', 0, 'serial_no']],
      ['/box/device/BX-00001', successEnvelope(deviceSchema), ['data', 'battery_level']],
      ['/call/list', callListEnvelopeSchema, ['meta', 'has_next']],
      [`/call/${made.data.call_id}`, successEnvelope(callSchema), ['data', 'agent_id']],
    ];
    for (const [path, schema, issuePath] of cases) {
      const parsed = schema.safeParse(await (await sim.get(path)).json());
      expect(parsed.success, path).toBe(false);
      expect(parsed.error?.issues.map((i) => i.path)).toContainEqual(issuePath);
    }
    const again = successEnvelope(makeCallResultSchema).safeParse(await (await sim.makeCall({ from: `box:${serial}`, to: '+14155550123', agent_id: '101' })).json());
    expect(again.error?.issues.map((i) => i.path)).toContainEqual(['data', 'call_id']);
  });

  it('resets the connection without an answer', async () => {
    const sim = await startTestSim();
    sim.sim.inject({ reset: true, count: 1 });
    await expect(sim.get('/box/device-list')).rejects.toThrow();
    expect((await sim.get('/box/device-list')).status).toBe(200);
  });

  it('hangs until the client gives up, and closes cleanly with a hanging request', async () => {
    const sim = await startTestSim();
    sim.sim.inject({ hang: true, count: 1 });
    const hung = fetch(`${sim.url}/api/gateway/v1/box/device-list`, { signal: AbortSignal.timeout(200) });
    await expect(hung).rejects.toThrow(/timeout|aborted/i);
    expect((await sim.get('/box/device-list')).status).toBe(200);
  });

  it('adds latency and still answers correctly', async () => {
    const sim = await startTestSim();
    sim.sim.inject({ latencyMs: 50, endpoints: ['device_details'] });
    const res = await sim.get('/box/device/BX-00002');
    expect(successEnvelope(deviceSchema).parse(await res.json()).data.serial_no).toBe('BX-00002');
  });

  it('hits roughly the given share of requests with an error rate, the same way for the same seed', async () => {
    const statuses = async (): Promise<number[]> => {
      const sim = await startTestSim({ seed: 11 });
      sim.sim.inject({ status: 500, rate: 0.3 });
      const out: number[] = [];
      for (let i = 0; i < 40; i++) out.push((await sim.get('/box/device/BX-00001')).status);
      return out;
    };
    const a = await statuses();
    const failures = a.filter((s) => s === 500).length;
    expect(failures).toBeGreaterThan(4);
    expect(failures).toBeLessThan(25);
    expect(await statuses()).toEqual(a);
  });

  it('applies a window only between its times and can be removed', async () => {
    const sim = await startTestSim();
    const remove = sim.sim.inject({ from: 60_000, to: 120_000, status: 503 });
    expect((await sim.get('/call/list')).status).toBe(200);
    sim.clock.advance(60_000);
    expect((await sim.get('/call/list')).status).toBe(503);
    remove();
    expect((await sim.get('/call/list')).status).toBe(200);
  });
});
