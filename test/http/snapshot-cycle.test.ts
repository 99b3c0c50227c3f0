/**
 * After each poll cycle the daemon brings its fleet snapshot (src/http/snapshot.ts) up to date
 * once: one read of the latest cycles per cycle, however many of the cycle's consumers (the
 * heartbeat's firing count, the templates' fleet counts, /metrics' prepared fleet, the dashboard's
 * live event) look at it. The daemon on a real SQLite file polls the simulator over real HTTP with
 * its HTTP server up; the store's reads are counted by a spy on the real store.
 */
import { afterEach, expect, it, vi } from 'vitest';
import { startRig, type Rig } from '../e2e/harness.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

it('a cycle reads the latest cycles once, and /metrics still shows what the cycle polled', async () => {
  rig = await startRig({ devices: 5, http: {} });
  await rig.cycle(); // the first one reads the whole fleet
  const lastCycles = vi.spyOn(rig.app.store, 'lastCycles');
  for (let i = 0; i < 6; i++) await rig.cycle();
  expect(lastCycles).toHaveBeenCalledTimes(6);
  // What the cycles left is what /metrics shows (the prepared fleet is the snapshot's).
  const metrics = await (await fetch(`${rig.app.httpUrl}/metrics`)).text();
  expect(metrics.match(/^boxwatch_box_battery_percent\{/gm)).toHaveLength(5);
});
