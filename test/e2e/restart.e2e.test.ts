/**
 * End to end: restart semantics on the same SQLite file (in process, one FakeClock). A restart
 * neither re-notifies firing alerts nor forgets them; an alert that resolved while the daemon was
 * down is resolved and notified on the first good cycle.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startRig, type Rig } from './harness.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

describe('restart end to end', () => {
  it('a firing alert is not re-notified after a restart, and still resolves once afterwards', async () => {
    rig = await startRig();
    rig.sim.sim.fleet.apply(rig.sim.sim.fleet.boxes, { kind: 'connect' });
    await rig.cycle(0);
    const box = rig.sim.sim.fleet.boxes[3]!;
    rig.sim.sim.fleet.apply([box], { kind: 'disconnect' });
    await rig.cycle();
    expect(rig.smtp.messages).toHaveLength(1);
    expect(rig.slack.received).toHaveLength(1);

    await rig.restart(() => rig!.clock.advance(60_000));
    await rig.cycle();
    await rig.cycle();
    expect(rig.smtp.messages).toHaveLength(1);
    expect(rig.slack.requests).toHaveLength(1);
    expect(rig.console).toHaveLength(1);
    // Not forgotten either: the new process knows the alert is firing since before the restart.
    const firing = [...(await rig.app.alerts.states()).values()].filter((s) => s.status === 'firing');
    expect(firing.map((s) => s.serial)).toEqual([box.serial]);

    rig.sim.sim.fleet.apply([box], { kind: 'connect' });
    await rig.cycle();
    expect(rig.smtp.messages.map((m) => m.subject.slice(0, 10))).toEqual(['[FIRING] c', '[RESOLVED]']);
    expect(rig.smtp.messages[1]!.text).toContain('fired 2026-03-01 12:00:30 UTC');
    expect(rig.slack.received).toHaveLength(2);
  });

  it('an alert that resolved while the daemon was down is resolved and notified on the first good cycle', async () => {
    rig = await startRig();
    rig.sim.sim.fleet.apply(rig.sim.sim.fleet.boxes, { kind: 'connect' });
    await rig.cycle(0);
    const box = rig.sim.sim.fleet.boxes[5]!;
    rig.sim.sim.fleet.apply([box], { kind: 'disconnect' });
    await rig.cycle();
    expect(rig.smtp.messages).toHaveLength(1);

    await rig.restart(() => {
      rig!.clock.advance(5 * 60_000);
      rig!.sim.sim.fleet.apply([box], { kind: 'connect' }); // back while nobody watched
      rig!.clock.advance(5 * 60_000);
    });
    await rig.cycle();
    expect(rig.smtp.messages).toHaveLength(2);
    expect(rig.smtp.messages[1]!.subject).toMatch(new RegExp(`^\\[RESOLVED\\] critical: box ${box.serial} `));
    expect(rig.slack.received).toHaveLength(2);
    expect(rig.console).toHaveLength(2);
    expect(rig.console[1]).toMatch(new RegExp(`\n {2}RESOLVED {2}${box.serial} .*· box-offline, after `));
    expect([...(await rig.app.alerts.states()).values()].filter((s) => s.status === 'firing')).toEqual([]);

    await rig.cycle();
    expect(rig.smtp.messages).toHaveLength(2);
    expect(rig.slack.requests).toHaveLength(2);
  });

  it('a message queued but not yet delivered before a stop is delivered after the restart, once', async () => {
    rig = await startRig();
    rig.sim.sim.fleet.apply(rig.sim.sim.fleet.boxes, { kind: 'connect' });
    await rig.cycle(0);
    const box = rig.sim.sim.fleet.boxes[6]!;
    rig.sim.sim.fleet.apply([box], { kind: 'disconnect' });
    rig.clock.advance(30_000);
    await rig.app.runOnce(); // transition and outbox rows committed; no delivery pass yet
    expect(rig.smtp.messages).toHaveLength(0);

    await rig.restart();
    await rig.app.deliverNow();
    expect(rig.smtp.messages).toHaveLength(1);
    expect(rig.smtp.messages[0]!.subject).toContain(box.serial);
    expect(rig.slack.received).toHaveLength(1);
    await rig.cycle();
    expect(rig.smtp.messages).toHaveLength(1);
    expect(rig.slack.requests).toHaveLength(1);
  });
});
