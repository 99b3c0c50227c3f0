/**
 * Call facts no call sync has renewed for two `calls.schedule` intervals are not judged
 * (src/calls/index.ts, `maxAgeMs`): a call rule whose alert is pending does not fire from facts
 * read long ago (the call syncs stopped running), it waits, unknown, for the next call sync. The
 * daemon of test/e2e/harness.ts (the simulator over real HTTP, a real SQLite file, a fake clock).
 */
import { afterEach, expect, it } from 'vitest';
import { startRig, type Rig } from '../e2e/harness.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

it('a pending call alert does not fire from facts older than two call-sync intervals; the next call sync judges again', async () => {
  const r = (rig = await startRig({
    devices: 1,
    seed: 4,
    yaml: `calls: { schedule: "*/30 * * * * *" }
rules:
  - { name: call-failures, kind: call_failure_rate, window: 10, min_calls: 3, above: 50, clear_below: 35, for: 2m, severity: warning }
alerting: { group_wait: 0s }`,
    scenario: `calls: { per_box_per_hour: 600 }
timeline:
  - { at: 0s, box: "BX-*", connect: true }
  - { at: 0s, calls_fail: { box: "BX-*", rate: 1 } }
`,
    sim: { historyCalls: 0 },
  }));
  const status = async (): Promise<string | undefined> => [...(await r.app.alerts.states()).values()].find((s) => s.rule === 'call-failures')?.status;
  r.clock.advance(60_000);
  await r.app.runCallsOnce();
  await r.app.runOnce();
  expect(await status()).toBe('pending');
  // Three minutes on, past `for`, without a call sync since (facts read 3 minutes ago, the limit 1 minute).
  r.clock.advance(3 * 60_000);
  await r.app.runOnce();
  expect(await status()).toBe('pending');
  // A call sync reads the facts again: still failing, and past `for`: it fires.
  r.clock.advance(30_000);
  await r.app.runCallsOnce();
  await r.app.runOnce();
  expect(await status()).toBe('firing');
}, 60_000);
