/**
 * A daemon (test/e2e/harness.ts: createApp on real SQLite, HTTP on) reading the simulator's
 * background calls over real HTTP, for the tests of where call health shows: six boxes, 30 calls
 * per box and hour, BX-00003's calls failing from 20 minutes on. `minutes` one-minute cycles of
 * call sync and polling have run when it is returned.
 */
import { startRig, type Rig } from '../e2e/harness.js';

export async function startCallsRig(options: { minutes: number; start?: number; timeline?: string[] }): Promise<Rig> {
  const rig = await startRig({
    ...(options.start !== undefined && { start: options.start }),
    devices: 6,
    seed: 9,
    http: {},
    yaml: 'rules: []\nalerting: { group_wait: 0s }\ncalls: {}\n',
    scenario: `calls: { per_box_per_hour: 30 }
timeline:
  - { at: 0s, box: "BX-*", connect: true }
  - { at: 20m, calls_fail: { box: BX-00003, rate: 1 } }
${(options.timeline ?? []).map((line) => `  - ${line}\n`).join('')}`,
    sim: { historyCalls: 0 },
  });
  for (let i = 0; i < options.minutes; i++) {
    rig.clock.advance(60_000);
    await rig.app.runCallsOnce();
    await rig.app.runOnce();
  }
  return rig;
}
