/**
 * Call rules end to end: the simulator's background calls over real HTTP, the daemon (createApp)
 * with call sync and poll cycles on a real SQLite file, alerts delivered to a real Slack receiver
 * and a real SMTP server. One shared fake clock; every simulated minute a call sync, a poll cycle
 * and a delivery pass run.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { callMinutes, slackTexts, startRig, type Rig } from '../e2e/harness.js';

const M = 60_000;

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const RULES = `rules:
  - { name: box-offline, kind: disconnected, severity: critical }
  - { name: call-failures, kind: call_failure_rate, window: 10, min_calls: 5, above: 50, clear_below: 20, severity: warning }
  - { name: call-stuck, kind: call_stuck, max_duration: 10m, severity: warning }
alerting: { group_wait: 0s }
calls: { per_page: 100 }
`;

const TRAFFIC = `calls: { per_box_per_hour: 30 }
timeline:
  - { at: 0s, box: "BX-*", connect: true }
`;

async function callRig(scenario: string): Promise<Rig> {
  rig = await startRig({ devices: 6, seed: 9, yaml: RULES, scenario: TRAFFIC + scenario, sim: { historyCalls: 0 } });
  return rig;
}

const minutes = callMinutes;

/** The Slack messages (all their texts) that contain `text` and name box `serial` (grouped messages show summaries, not rule names). */
function slackOf(r: Rig, text: string, serial: string): string[] {
  return r.slack.received.map((m) => slackTexts(m.body).join('\n')).filter((t) => t.includes(text) && t.includes(serial));
}

function mailsOf(r: Rig, serial: string): string[] {
  return r.smtp.messages.filter((m) => m.subject.includes(serial)).map((m) => `${m.subject}\n${m.text}`);
}

describe('call rules end to end', () => {
  it('a box whose calls start failing raises one alert, and it resolves after recovery', async () => {
    const r = await callRig('  - { at: 30m, calls_fail: { box: BX-00003, rate: 1, for: 40m } }\n');
    await minutes(r, 29);
    expect(r.slack.received).toHaveLength(0); // healthy calls: nothing to say

    await minutes(r, 40);
    const firing = slackOf(r, 'calls failed', 'BX-00003');
    expect(firing).toHaveLength(1);
    expect(firing[0]).toMatch(/FIRING/);
    expect(firing[0]).toMatch(/of 10 calls failed/);
    expect(mailsOf(r, 'BX-00003')).toHaveLength(1);
    const state = (await r.app.alerts.states()).get('call-failures\u0000BX-00003');
    expect(state?.status).toBe('firing');

    // the calls recover at 70m; within the next 10 calls the share falls below 20 %
    await minutes(r, 40);
    const all = slackOf(r, 'calls failed', 'BX-00003');
    expect(all).toHaveLength(2);
    expect(all[1]).toMatch(/RESOLVED/);
    expect(mailsOf(r, 'BX-00003')).toHaveLength(2);
    // no other box's calls were judged failing
    expect(r.slack.received).toHaveLength(2);
  });

  it('a stuck call alerts', async () => {
    const r = await callRig('  - { at: 5m, calls_stuck: { box: BX-00005 } }\n');
    await minutes(r, 12);
    expect(slackOf(r, 'initiated longer than', 'BX-00005')).toHaveLength(0);
    await minutes(r, 20);
    const firing = slackOf(r, 'initiated longer than', 'BX-00005');
    expect(firing).toHaveLength(1);
    expect(firing[0]).toMatch(/FIRING/);
    expect(firing[0]).toMatch(/initiated longer than 10m/);
    expect(r.slack.received).toHaveLength(1);
  });

  it('a disconnected box holds back its call alerts; the gateway being down freezes them', async () => {
    const r = await callRig(`  - { at: 30m, calls_fail: { box: BX-00003, rate: 1, for: 60m } }
  - { at: 58m, box: BX-00003, disconnect: true, for: 20m }
  - { from: 100m, to: 130m, status: 503 }
`);
    await minutes(r, 30);
    // The call sync falls behind while the box's calls fail (only the device poll runs) ...
    for (let i = 0; i < 30; i++) {
      r.clock.advance(M);
      await r.app.runOnce();
      await r.app.deliverNow();
    }
    // ... and catches up after the box disconnected at 58m: its call alert fires, held back.
    await minutes(r, 2);
    expect((await r.app.alerts.states()).get('box-offline\u0000BX-00003')?.status).toBe('firing');
    const held = (await r.app.alerts.states()).get('call-failures\u0000BX-00003');
    expect(held?.status).toBe('firing');
    expect(held?.notifiedFiring).toBe(false);
    expect(slackOf(r, 'disconnected', 'BX-00003')).toHaveLength(1);
    expect(slackOf(r, 'calls failed', 'BX-00003')).toHaveLength(0);
    const transition = (await r.app.alerts.transitionsSince(0)).find((t) => t.rule === 'call-failures' && t.to === 'firing');
    expect(transition?.heldBack).toBe('inhibited');

    // Back at 78m: the box-offline alert resolves and the call alert is told, once.
    await minutes(r, 20);
    expect(slackOf(r, 'RESOLVED', 'BX-00003').filter((t) => /connected/.test(t))).toHaveLength(1);
    expect(slackOf(r, 'calls failed', 'BX-00003')).toHaveLength(1);
    expect(slackOf(r, 'calls failed', 'BX-00003')[0]).toMatch(/FIRING 1, RESOLVED 1/); // grouped with box-offline's resolution

    // The calls recover at 90m, but the gateway answers 503 from 100m to 130m: nothing is known,
    // the alert stays as it was.
    await minutes(r, 45);
    expect((await r.app.alerts.states()).get('call-failures\u0000BX-00003')?.status).toBe('firing');
    expect(slackOf(r, 'calls failed', 'BX-00003')).toHaveLength(1);

    // The gateway is back: fresh calls, the alert resolves.
    await minutes(r, 20);
    const told = slackOf(r, 'calls failed', 'BX-00003');
    expect(told).toHaveLength(2);
    expect(told[1]).toMatch(/RESOLVED/);
  });
});
