import { afterEach, describe, expect, it } from 'vitest';
import { startRig, type Rig } from './harness.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

describe('alerting end to end', () => {
  it('a box disconnects: one firing email and one Slack message; it reconnects: one resolved of each', async () => {
    rig = await startRig();
    rig.sim.sim.fleet.apply(rig.sim.sim.fleet.boxes, { kind: 'connect' });
    await rig.cycle(0);
    expect(rig.smtp.messages).toHaveLength(0);
    const box = rig.sim.sim.fleet.boxes.find((b) => b.connected)!;
    rig.sim.sim.fleet.apply([box], { kind: 'disconnect' });
    await rig.cycle();
    const [firing] = await rig.smtp.waitFor(1);
    expect(firing!.subject).toMatch(/^\[FIRING\] critical: /);
    expect(firing!.subject).toContain(box.serial);
    await rig.slack.waitFor(1);
    expect(JSON.stringify(rig.slack.received[0]!.body)).toContain(box.serial);

    await rig.cycle(); // still down: nothing new
    expect(rig.smtp.messages).toHaveLength(1);
    expect(rig.slack.received).toHaveLength(1);

    rig.sim.sim.fleet.apply([box], { kind: 'connect' });
    await rig.cycle();
    const mails = await rig.smtp.waitFor(2);
    expect(mails[1]!.subject).toMatch(/^\[RESOLVED\]/);
    await rig.slack.waitFor(2);
    expect(rig.console.some((l) => l.includes(box.serial))).toBe(true);
  });
});
