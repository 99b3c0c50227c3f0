/**
 * Several accounts in one simulator (src/sim/accounts.ts), over real HTTP: the key decides which
 * fleet, calls, faults and scenario a request sees; serials are distinct per account unless
 * `sharedSerials`; `boxwatch sim --accounts` serves the same.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MESSAGES } from '../../src/gateway/messages.js';
import { callListEnvelopeSchema, deviceSchema, deviceSummarySchema, makeCallResultSchema, successEnvelope } from '../../src/gateway/schemas.js';
import { parseScenario } from '../../src/sim/scenario.js';
import { KEY, startTestSim, type TestSim } from './helpers.js';

const listSchema = successEnvelope(z.array(deviceSummarySchema));
const serials = async (sim: TestSim, key: string): Promise<string[]> => listSchema.parse(await (await sim.get('/box/device-list', key)).json()).data.map((d) => d.serial_no);

describe('simulator: several accounts', () => {
  it('each key sees its own fleet, with its own serial prefix; keys are KEY-1 ... KEY-N and the bare key is refused', async () => {
    const sim = await startTestSim({ accounts: 3, devices: 4 });
    expect(sim.accounts.map((a) => [a.index, a.key, a.serialPrefix])).toEqual([
      [1, `${KEY}-1`, 'BX01-'],
      [2, `${KEY}-2`, 'BX02-'],
      [3, `${KEY}-3`, 'BX03-'],
    ]);
    expect(sim.sim).toBe(sim.accounts[0]?.sim);
    expect(await serials(sim, `${KEY}-1`)).toEqual(['BX01-00001', 'BX01-00002', 'BX01-00003', 'BX01-00004']);
    expect(await serials(sim, `${KEY}-3`)).toEqual(['BX03-00001', 'BX03-00002', 'BX03-00003', 'BX03-00004']);
    for (const key of [KEY, `${KEY}-4`, '']) {
      const res = await sim.get('/box/device-list', key);
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ status: 'error', message: MESSAGES.unauthorized });
    }
  });

  it("another account's box is not found, and make-call from it is refused", async () => {
    const sim = await startTestSim({ accounts: 2, devices: 3 });
    expect((await sim.get('/box/device/BX01-00001', `${KEY}-1`)).status).toBe(200);
    const other = await sim.get('/box/device/BX01-00001', `${KEY}-2`);
    expect(other.status).toBe(404);
    expect(await other.json()).toEqual({ status: 'error', message: MESSAGES.deviceNotFound });
    const refused = await sim.makeCall({ from: 'box:BX01-00001', to: '+14155550123', agent_id: '101' }, `${KEY}-2`);
    expect(refused.status).toBe(422);
  });

  it('shared serials: the same serial in every account, a different box behind each key, and calls stay in their account', async () => {
    const sim = await startTestSim({ accounts: 2, devices: 5, sharedSerials: true, historyCalls: 0 });
    expect(await serials(sim, `${KEY}-1`)).toEqual(await serials(sim, `${KEY}-2`));
    const details = async (key: string) => successEnvelope(deviceSchema).parse(await (await sim.get('/box/device/BX-00001', key)).json()).data;
    const [one, two] = [await details(`${KEY}-1`), await details(`${KEY}-2`)];
    expect(one.serial_no).toBe(two.serial_no);
    expect([one.id, one.device_name, one.ip_address]).not.toEqual([two.id, two.device_name, two.ip_address]);

    const connected = sim.accounts[1]!.sim.fleet.boxes.find((b) => b.connected && b.listed)!;
    const placed = await sim.makeCall({ from: `box:${connected.serial}`, to: '+14155550123', agent_id: '101' }, `${KEY}-2`);
    expect(placed.status).toBe(200);
    const { call_id } = successEnvelope(makeCallResultSchema).parse(await placed.json()).data;
    const list = async (key: string) => callListEnvelopeSchema.parse(await (await sim.get('/call/list', key)).json()).data.map((c) => c.call_id);
    expect(await list(`${KEY}-2`)).toEqual([call_id]);
    expect(await list(`${KEY}-1`)).toEqual([]);
  });

  it("a fault injected into one account hits only that account's requests", async () => {
    const sim = await startTestSim({ accounts: 2, devices: 3 });
    sim.accounts[1]!.sim.inject({ status: 503 });
    expect((await sim.get('/box/device-list', `${KEY}-2`)).status).toBe(503);
    expect((await sim.get('/box/device-list', `${KEY}-1`)).status).toBe(200);
    // with several accounts, a request with an unknown key is refused before any fault
    expect((await sim.get('/box/device-list', 'nobody')).status).toBe(401);
  });

  it("each account's scenario moves only its fleet; the scenario given for the simulator is account 1's", async () => {
    const first = parseScenario('timeline:\n  - at: 30s\n    box: BX01-00002\n    disconnect: true\n');
    const second = parseScenario('timeline:\n  - at: 30s\n    box: BX02-00003\n    listed: false\n');
    const sim = await startTestSim({ devices: 4, scenario: first, accounts: [{}, { scenario: second }, { devices: 2 }] });
    sim.clock.advance(60_000);
    const connected = async (key: string, serial: string) => {
      const res = await sim.get(`/box/device/${serial}`, key);
      return res.status === 200 ? successEnvelope(deviceSchema).parse(await res.json()).data.connected : res.status;
    };
    expect(await connected(`${KEY}-1`, 'BX01-00002')).toBe(false);
    expect(await connected(`${KEY}-2`, 'BX02-00002')).toBe(true);
    expect(await serials(sim, `${KEY}-2`)).toEqual(['BX02-00001', 'BX02-00002', 'BX02-00004']);
    expect(await serials(sim, `${KEY}-1`)).toContain('BX01-00003');
    expect(await serials(sim, `${KEY}-3`)).toEqual(['BX03-00001', 'BX03-00002']);
  });

  it('one account (the default) keeps the bare key and the BX- serials', async () => {
    const sim = await startTestSim({ devices: 2 });
    expect(sim.accounts.map((a) => [a.key, a.serialPrefix])).toEqual([[KEY, 'BX-']]);
    expect(await serials(sim, KEY)).toEqual(['BX-00001', 'BX-00002']);
  });
});
