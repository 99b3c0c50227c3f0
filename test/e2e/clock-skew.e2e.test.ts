/**
 * A gateway whose clock is off: boxwatch moves last_seen onto its own clock (from the HTTP Date
 * header), so the stale rule neither fires because the gateway is behind nor stays quiet because
 * it is ahead.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startRig, type Rig } from './harness.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const STALE_ONLY = 'rules:\n  - { name: box-stale, kind: stale, max_age: 5m, severity: warning }\nalerting: { group_wait: 0s }';

describe('gateway clock skew', () => {
  it.each([
    ['10 minutes behind', -10 * 60_000],
    ['10 minutes ahead', 10 * 60_000],
  ])('a gateway %s: healthy boxes are not stale, and last seen is on our clock', async (_label, skew) => {
    rig = await startRig({ devices: 5, yaml: STALE_ONLY });
    const fleet = rig.sim.sim.fleet;
    fleet.apply(fleet.boxes, { kind: 'connect' });
    fleet.apply(fleet.boxes, { kind: 'stale', on: false });
    fleet.skewMs = skew;
    for (let i = 0; i < 4; i++) await rig.cycle(i === 0 ? 0 : 30_000);
    expect(rig.smtp.messages).toHaveLength(0);
    for (const box of rig.app.store.boxes()) expect(Math.abs(box.lastSeen - rig.clock.now())).toBeLessThan(60_000);
  });

  it('a box that really stopped reporting is stale although the gateway clock is behind', async () => {
    rig = await startRig({ devices: 5, yaml: STALE_ONLY });
    const fleet = rig.sim.sim.fleet;
    fleet.apply(fleet.boxes, { kind: 'connect' });
    fleet.apply(fleet.boxes, { kind: 'stale', on: false });
    fleet.skewMs = -10 * 60_000;
    const box = fleet.boxes[2]!;
    await rig.cycle(0);
    fleet.apply([box], { kind: 'stale', on: true });
    for (let i = 0; i < 12; i++) await rig.cycle(30_000); // 6 minutes
    const mails = await rig.smtp.waitFor(1);
    expect(mails).toHaveLength(1);
    expect(mails[0]!.subject).toContain(box.serial);
    expect(mails[0]!.subject).toMatch(/^\[FIRING\] warning/);
  });
});
