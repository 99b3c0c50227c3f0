/**
 * End to end: gateway outages and a rotated key (built-in gateway alerts), and an SMTP outage
 * that must neither lose the e-mail nor delay Slack.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { slackTexts, startRig, type Rig } from './harness.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

/** Rules that would fire on every box if an outage were mistaken for data (stale, missing, disconnected). */
const BOX_RULES = `rules:
  - { name: box-offline, kind: disconnected, severity: critical }
  - { name: box-stale, kind: stale, max_age: 1m, severity: warning }
  - { name: box-missing, kind: missing, severity: warning }
alerting: { group_wait: 0s, gateway: { unreachable_after: 3 } }`;

const subjects = (r: Rig): string[] => r.smtp.messages.map((m) => m.subject);

describe('gateway alerts end to end', () => {
  it('503 for several cycles: one gateway_unreachable after 3 failed cycles, no per-box alert, resolved on recovery', async () => {
    rig = await startRig({ yaml: BOX_RULES });
    rig.sim.sim.fleet.apply(rig.sim.sim.fleet.boxes, { kind: 'connect' });
    await rig.cycle(0);
    expect(rig.smtp.messages).toHaveLength(0);

    const remove = rig.sim.sim.inject({ status: 503 });
    await rig.cycle();
    await rig.cycle();
    expect(rig.smtp.messages).toHaveLength(0); // two failed cycles: not yet
    await rig.cycle();
    expect(subjects(rig)).toEqual([expect.stringMatching(/^\[FIRING\] critical: the gateway cannot be reached/)]);
    expect(rig.slack.received).toHaveLength(1);
    expect(slackTexts(rig.slack.received[0]!.body).join('\n')).toContain('gateway_unreachable');
    // Still down for two more minutes: no repeat, and no box goes stale or missing meanwhile.
    for (let i = 0; i < 4; i++) await rig.cycle();
    expect(rig.smtp.messages).toHaveLength(1);
    expect(rig.slack.requests).toHaveLength(1);

    remove();
    await rig.cycle();
    expect(subjects(rig)).toHaveLength(2);
    expect(subjects(rig)[1]).toMatch(/^\[RESOLVED\] critical: the gateway answers again/);
    expect(rig.slack.received).toHaveLength(2);
    await rig.cycle();
    expect(rig.smtp.messages).toHaveLength(2);
    // Nothing about any box was ever sent, on any channel.
    for (const box of rig.sim.sim.fleet.boxes) {
      expect(rig.smtp.messages.some((m) => m.text.includes(box.serial))).toBe(false);
      expect(rig.slack.received.some((r) => JSON.stringify(r.body).includes(box.serial))).toBe(false);
      expect(rig.console.some((l) => l.includes(box.serial))).toBe(false);
    }
    const rules = new Set((await rig.app.alerts.transitionsSince(0)).map((t) => t.rule));
    expect([...rules]).toEqual(['gateway_unreachable']);
  });

  it('a rotated key: one gateway_unauthorized alert at once, resolved when the key works again', async () => {
    rig = await startRig({ yaml: BOX_RULES });
    rig.sim.sim.fleet.apply(rig.sim.sim.fleet.boxes, { kind: 'connect' });
    await rig.cycle(0);

    rig.sim.sim.rotateKey('a-new-key-we-do-not-have');
    await rig.cycle();
    expect(subjects(rig)).toEqual([expect.stringMatching(/^\[FIRING\] critical: the gateway rejects the account secret key/)]);
    expect(rig.slack.received).toHaveLength(1);
    for (let i = 0; i < 4; i++) await rig.cycle();
    expect(rig.smtp.messages).toHaveLength(1); // neither repeated nor joined by gateway_unreachable
    expect(rig.slack.requests).toHaveLength(1);
    // The key never appears in what was sent.
    expect(rig.smtp.messages[0]!.text).not.toContain('e2e-account-key');

    rig.sim.sim.rotateKey('e2e-account-key');
    await rig.cycle();
    expect(subjects(rig)[1]).toMatch(/^\[RESOLVED\] critical: the gateway accepts the key again/);
    expect(rig.slack.received).toHaveLength(2);
    expect(new Set((await rig.app.alerts.transitionsSince(0)).map((t) => t.rule))).toEqual(new Set(['gateway_unauthorized']));
  });
});

describe('delivery end to end', () => {
  it('SMTP down for a minute: the e-mail arrives once it is back, Slack is not delayed', async () => {
    rig = await startRig({
      yaml: `rules:
  - { name: box-offline, kind: disconnected, severity: critical }
alerting: { group_wait: 0s, delivery: { initial_backoff: 5s, max_backoff: 20s } }`,
    });
    rig.sim.sim.fleet.apply(rig.sim.sim.fleet.boxes, { kind: 'connect' });
    await rig.cycle(0);
    const box = rig.sim.sim.fleet.boxes[1]!;

    await rig.smtp.stop();
    rig.sim.sim.fleet.apply([box], { kind: 'disconnect' });
    await rig.cycle();
    // Slack went out on the first pass although e-mail failed.
    expect(rig.slack.received).toHaveLength(1);
    expect(JSON.stringify(rig.slack.received[0]!.body)).toContain(box.serial);
    expect(rig.console).toHaveLength(1);
    expect(rig.smtp.messages).toHaveLength(0);

    // A minute of outage: retries (with backoff) keep failing, the message stays queued.
    for (let t = 0; t < 60_000; t += 10_000) {
      rig.clock.advance(10_000);
      await rig.app.deliverNow();
    }
    expect(rig.smtp.messages).toHaveLength(0);
    expect((await rig.app.outbox.stats()).find((s) => s.notifier === 'ops-mail')).toMatchObject({ pending: 1, dead: 0 });

    await rig.smtp.start();
    rig.clock.advance(20_000); // past any backoff (max_backoff 20s)
    await rig.app.deliverNow();
    expect(rig.smtp.messages).toHaveLength(1);
    expect(rig.smtp.messages[0]!.subject).toMatch(new RegExp(`^\\[FIRING\\] critical: box ${box.serial} `));
    expect((await rig.app.outbox.stats()).find((s) => s.notifier === 'ops-mail')).toMatchObject({ pending: 0, dead: 0, delivered: 1 });

    // Exactly once on each channel; no delivery-failure notice (nothing was given up).
    rig.clock.advance(30_000);
    await rig.app.deliverNow();
    expect(rig.smtp.messages).toHaveLength(1);
    expect(rig.slack.requests).toHaveLength(1);
    expect(rig.console).toHaveLength(1);
  });
});
