/**
 * Several accounts end to end (test/e2e/accounts-rig.ts): two simulators over real HTTP, the
 * daemon built from a `gateways:` configuration, a real SQLite file, a real Slack receiver.
 *
 * What it proves: boxes of both accounts are stored under their account; one account's bad key
 * raises that account's gateway alert only and freezes only its boxes, while the other account
 * keeps polling and alerting; when the key is accepted again the frozen boxes are judged again.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { SlackReceiver } from '../helpers/slack-receiver.js';
import { GLOBEX_KEY, startAccountsRig, type AccountsRig } from './accounts-rig.js';
import { slackTexts } from './harness.js';

let rig: AccountsRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

/** The pending and firing alerts as `rule box status` (box: its id, or the account's fleet key for gateway alerts). */
async function openAlerts(app: App): Promise<string[]> {
  return [...(await app.alerts.states()).values()].filter((s) => s.status !== 'resolved').map((s) => `${s.rule} ${s.serial} ${s.status}`).sort();
}

/** Every text Slack received, one string per message. */
const slackMessages = (slack: SlackReceiver): string[] => slack.received.map((m) => slackTexts(m.body).join('\n'));

describe('several accounts end to end', () => {
  it('stores the boxes of both accounts under their account, with the same serials kept apart', async () => {
    rig = await startAccountsRig();
    const boxes = await rig.app.store.boxes();
    expect(boxes.map((b) => [b.serial, b.account])).toEqual([
      ['acme/BX-00001', 'acme'], ['acme/BX-00002', 'acme'], ['acme/BX-00003', 'acme'],
      ['globex/BX-00001', 'globex'], ['globex/BX-00002', 'globex'], ['globex/BX-00003', 'globex'],
    ]);
    // The same serial in two accounts is two boxes: each holds its own simulator's values.
    const acme1 = rig.acme.sim.fleet.boxes[0]!;
    const globex1 = rig.globex.sim.fleet.boxes[0]!;
    expect((await rig.app.store.box('acme/BX-00001'))?.name).toBe(acme1.name);
    expect((await rig.app.store.box('globex/BX-00001'))?.name).toBe(globex1.name);
    expect(await openAlerts(rig.app)).toEqual([]);
  });

  it("a rule's accounts filter judges only those accounts' boxes; boxes globs match the bare serial in every account", async () => {
    rig = await startAccountsRig({
      rules: `rules:
  - { name: acme-offline, kind: disconnected, severity: critical, accounts: [acme] }
  - { name: lobby-offline, kind: disconnected, severity: warning, boxes: [BX-00002] }`,
    });
    for (const sim of [rig.acme, rig.globex]) sim.sim.fleet.apply([sim.sim.fleet.boxes[1]!, sim.sim.fleet.boxes[2]!], { kind: 'disconnect' });
    await rig.cycle();
    expect(await openAlerts(rig.app)).toEqual([
      'acme-offline acme/BX-00002 firing',
      'acme-offline acme/BX-00003 firing',
      'lobby-offline acme/BX-00002 firing',
      'lobby-offline globex/BX-00002 firing',
    ]);
  });

  it("one account's bad key alerts for that account only and freezes only its boxes; the other keeps alerting", async () => {
    rig = await startAccountsRig();
    // globex's key is rotated at the vendor: its cycles fail with unauthorized from now on.
    rig.globex.sim.rotateKey('globex-new-key');
    await rig.cycle();
    expect(await openAlerts(rig.app)).toEqual(['gateway_unauthorized globex/ firing']);
    expect(slackMessages(rig.slack)).toHaveLength(1);
    expect(slackMessages(rig.slack)[0]).toContain('gateway (globex)');
    expect(slackMessages(rig.slack)[0]).not.toContain('acme');

    // A box of each account disconnects; acme's alerts, globex's is frozen (no fresh data).
    rig.acme.sim.fleet.apply([rig.acme.sim.fleet.boxes[1]!], { kind: 'disconnect' });
    rig.globex.sim.fleet.apply([rig.globex.sim.fleet.boxes[1]!], { kind: 'disconnect' });
    // Long enough for globex's boxes to be stale by last poll (2m) if the outage were not frozen.
    for (let i = 0; i < 8; i++) await rig.cycle();
    expect(await openAlerts(rig.app)).toEqual(['box-offline acme/BX-00002 firing', 'gateway_unauthorized globex/ firing']);
    expect((await rig.app.store.box('globex/BX-00002'))?.connected).toBe(true); // as last seen: frozen, not guessed
    expect((await rig.app.store.boxes()).filter((b) => b.missingSince !== null)).toEqual([]);
    const texts = slackMessages(rig.slack);
    expect(texts).toHaveLength(2);
    expect(texts[1]).toContain('acme/BX-00002');
    // The cycle records name their account: globex's failed, acme's succeeded.
    expect(await rig.app.store.lastCycle()).toMatchObject({ account: 'globex', outcome: 'failed', errorCode: 'unauthorized' });

    // The key is accepted again: the gateway alert resolves, and globex's boxes are judged again.
    rig.globex.sim.rotateKey(GLOBEX_KEY);
    await rig.cycle();
    expect(await openAlerts(rig.app)).toEqual(['box-offline acme/BX-00002 firing', 'box-offline globex/BX-00002 firing']);
    const after = slackMessages(rig.slack).slice(2).join('\n---\n');
    expect(after).toContain('globex/BX-00002');
    expect(after).toMatch(/RESOLVED/);
  });
});
