/**
 * The host clock steps back (NTP correction, VM restore): every cycle is still recorded (just after
 * the last one: stored times only move forward), counted in /metrics, and alerts keep working,
 * gateway alerts included, across a restart.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startRig, type Rig } from './harness.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

describe('the clock steps back an hour', () => {
  it('cycles keep being recorded and counted, the gateway alert fires and resolves, also after a restart', async () => {
    rig = await startRig({ devices: 3, http: {} });
    const r = rig;
    r.sim.sim.fleet.apply(r.sim.sim.fleet.boxes, { kind: 'connect' });
    await r.cycle(0);
    await r.cycle();
    const last = r.app.store.lastCycle()!.startedAt;

    r.clock.set(r.clock.now() - 3_600_000);
    const remove = r.sim.sim.inject({ status: 503 });
    for (let i = 0; i < 3; i++) await r.cycle();
    expect(r.app.store.lastCycle()).toMatchObject({ startedAt: last + 3, outcome: 'failed' });
    expect(r.smtp.messages.map((m) => m.subject)).toEqual([expect.stringMatching(/^\[FIRING\] critical: the gateway cannot be reached/)]);
    const metrics = await (await fetch(`${r.app.httpUrl}/metrics`)).text();
    expect(metrics).toContain('boxwatch_clock_steps_back_total 3');

    // A restart while still behind: the previous cycle is read from the database.
    await r.restart();
    remove();
    await r.cycle();
    expect(r.app.store.lastCycle()).toMatchObject({ startedAt: last + 4, outcome: 'ok' });
    expect(r.smtp.messages.map((m) => m.subject)[1]).toMatch(/^\[RESOLVED\] critical: the gateway answers again/);
    // Once the clock is past the last recorded cycle again, cycles carry their own times.
    r.clock.set(last + 60_000);
    await r.cycle();
    expect(r.app.store.lastCycle()?.startedAt).toBe(last + 90_000);
  });
});
