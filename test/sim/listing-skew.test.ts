/** Boxes leaving and rejoining the device list, and a gateway whose clock is off. */
import { describe, expect, it } from 'vitest';
import { MESSAGES } from '../../src/gateway/messages.js';
import { parseScenario } from '../../src/sim/scenario.js';
import { json, startTestSim } from './helpers.js';

describe('device list membership', () => {
  it('an unlisted box is gone from the list and its details answer "Device not found"', async () => {
    const sim = await startTestSim({ devices: 5 });
    const box = sim.sim.fleet.boxes[2]!;
    sim.sim.fleet.apply([box], { kind: 'listed', on: false });
    const list = (await json(await sim.get('/box/device-list'))).data as { serial_no: string }[];
    expect(list.map((d) => d.serial_no)).not.toContain(box.serial);
    expect(list).toHaveLength(4);
    const details = await sim.get(`/box/device/${box.serial}`);
    expect(details.status).toBe(404);
    expect((await json(details)).message).toBe(MESSAGES.deviceNotFound);

    sim.sim.fleet.apply([box], { kind: 'listed', on: true });
    const back = (await json(await sim.get('/box/device-list'))).data as { serial_no: string }[];
    expect(back.map((d) => d.serial_no)).toContain(box.serial);
  });

  it('when every box is unlisted the account has no devices', async () => {
    const sim = await startTestSim({ devices: 2 });
    sim.sim.fleet.apply(sim.sim.fleet.boxes, { kind: 'listed', on: false });
    const res = await sim.get('/box/device-list');
    expect(res.status).toBe(404);
    expect((await json(res)).message).toBe(MESSAGES.noDevices);
  });

  it('a scenario takes a box off the list for a while', async () => {
    const scenario = parseScenario('devices: 3\ntimeline:\n  - { at: 1m, box: BX-00002, listed: false, for: 2m }\n');
    const sim = await startTestSim({ scenario });
    const serials = async (): Promise<string[]> => ((await json(await sim.get('/box/device-list'))).data as { serial_no: string }[]).map((d) => d.serial_no);
    expect(await serials()).toContain('BX-00002');
    sim.clock.advance(90_000);
    expect(await serials()).not.toContain('BX-00002');
    sim.clock.advance(120_000);
    expect(await serials()).toContain('BX-00002');
  });
});

describe('gateway clock skew', () => {
  it('shifts the Date header and every reported time by the skew', async () => {
    const sim = await startTestSim({ devices: 1 });
    const before = await sim.get('/box/device-list');
    const date0 = Date.parse(before.headers.get('date')!);
    const seen0 = Date.parse(((await json(before)).data as { last_seen: string }[])[0]!.last_seen);
    sim.sim.fleet.skewMs = 10 * 60_000;
    const after = await sim.get('/box/device-list');
    expect(Date.parse(after.headers.get('date')!) - date0).toBe(10 * 60_000);
    const seen1 = Date.parse(((await json(after)).data as { last_seen: string }[])[0]!.last_seen);
    expect(seen1 - seen0).toBe(10 * 60_000);
  });
});
