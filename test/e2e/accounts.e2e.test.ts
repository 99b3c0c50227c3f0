/**
 * Several accounts end to end: two simulators over real HTTP (one per account, each with its own
 * key and the same serials), the daemon built from a `gateways:` configuration (its own clients),
 * a real SQLite file and a real Slack webhook receiver. One FakeClock drives everything.
 *
 * What it proves: boxes of both accounts are stored under their account; one account's bad key
 * raises that account's gateway alert only and freezes only its boxes, while the other account
 * keeps polling and alerting; when the key is accepted again the frozen boxes are judged again.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfig } from '../../src/config/index.js';
import { silentLogger } from '../../src/log.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { openStore } from '../../src/store/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { startSlackReceiver, type SlackReceiver } from '../helpers/slack-receiver.js';
import { slackTexts } from './harness.js';

const ACME_KEY = 'acme-secret-key-1';
const GLOBEX_KEY = 'globex-secret-key-2';

interface Rig {
  clock: FakeClock;
  acme: RunningSimulator;
  globex: RunningSimulator;
  slack: SlackReceiver;
  app: App;
  dir: string;
  cycle(): Promise<void>;
}

let rig: Rig | undefined;
afterEach(async () => {
  if (rig === undefined) return;
  await rig.app.stop();
  await rig.acme.close();
  await rig.globex.close();
  await rig.slack.close();
  rmSync(rig.dir, { recursive: true, force: true });
  rig = undefined;
});

async function startRig(): Promise<Rig> {
  const clock = new FakeClock('2026-03-01T12:00:00Z');
  const acme = await startSimulator({ port: 0, key: ACME_KEY, devices: 3, seed: 1, clock });
  const globex = await startSimulator({ port: 0, key: GLOBEX_KEY, devices: 3, seed: 2, clock });
  for (const sim of [acme, globex]) sim.sim.fleet.apply(sim.sim.fleet.boxes, { kind: 'connect' });
  const slack = await startSlackReceiver();
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-accounts-'));
  const dbPath = join(dir, 'boxwatch.db');
  const config = parseConfig(
    `
gateways:
  - name: acme
    base_url: "${acme.url}"
    secret_key: \${ACME_KEY}
  - name: globex
    base_url: "${globex.url}"
    secret_key: \${GLOBEX_KEY}
storage: { path: "${dbPath}" }
rules:
  - { name: box-offline, kind: disconnected, severity: critical }
  - { name: box-stale, kind: stale, max_age: 2m, severity: warning }
  - { name: box-missing, kind: missing, severity: warning }
alerting: { group_wait: 0s }
notifiers:
  - { name: ops-slack, type: slack, webhook_url: "${slack.url}" }
http: false
`,
    { ACME_KEY, GLOBEX_KEY },
    'accounts e2e',
  );
  const app = createApp({ config, logger: silentLogger, clock, store: openStore(dbPath, { clock }) });
  const r: Rig = {
    clock,
    acme,
    globex,
    slack,
    app,
    dir,
    async cycle() {
      clock.advance(30_000);
      await app.runOnce(); // every account in turn
      await app.deliverNow();
    },
  };
  await r.cycle();
  return r;
}

/** The pending and firing alerts as `rule box status` (box: its id, or the account's fleet key for gateway alerts). */
async function openAlerts(app: App): Promise<string[]> {
  return [...(await app.alerts.states()).values()].filter((s) => s.status !== 'resolved').map((s) => `${s.rule} ${s.serial} ${s.status}`).sort();
}

/** Every text Slack received, one string per message. */
const slackMessages = (slack: SlackReceiver): string[] => slack.received.map((m) => slackTexts(m.body).join('\n'));

describe('several accounts end to end', () => {
  it('stores the boxes of both accounts under their account, with the same serials kept apart', async () => {
    rig = await startRig();
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

  it("one account's bad key alerts for that account only and freezes only its boxes; the other keeps alerting", async () => {
    rig = await startRig();
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
