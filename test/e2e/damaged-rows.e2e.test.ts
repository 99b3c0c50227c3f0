/** A damaged row in the alert tables never stops polling or a notifier. */
import { afterEach, describe, expect, it } from 'vitest';
import { startRig, type Rig } from './harness.js';
import { connectionOf } from '../helpers/sqlite.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

describe('damaged rows in the database', () => {
  it('a damaged alert state is set aside and the alert is evaluated afresh; cycles keep being recorded', async () => {
    rig = await startRig({ devices: 4 });
    const fleet = rig.sim.sim.fleet;
    fleet.apply(fleet.boxes, { kind: 'connect' });
    await rig.cycle(0);
    fleet.apply([fleet.boxes[0]!], { kind: 'disconnect' });
    await rig.cycle();
    expect(rig.smtp.messages).toHaveLength(1);
    connectionOf(rig.app.store).prepare("UPDATE alert_states SET state = '{not json'").run();
    await rig.cycle();
    expect(rig.app.store.lastCycle()?.outcome).toBe('ok');
    expect(rig.app.store.lastCycle()?.startedAt).toBe(rig.clock.now());
    expect(rig.app.store.damagedRows.counts()).toEqual([{ table: 'alert_states', count: 1 }]);
    expect([...rig.app.alerts.states().values()].map((s) => s.status)).toEqual(['firing']);
  });

  it('a damaged outbox row is marked dead and the messages behind it are still delivered', async () => {
    rig = await startRig({ devices: 4 });
    const fleet = rig.sim.sim.fleet;
    fleet.apply(fleet.boxes, { kind: 'connect' });
    await rig.cycle(0);
    connectionOf(rig.app.store).prepare("INSERT INTO outbox (notifier, created_at, message, next_attempt_at) VALUES ('ops-mail', 0, '{broken', 0)").run();
    fleet.apply([fleet.boxes[1]!], { kind: 'disconnect' });
    await rig.cycle();
    const mails = await rig.smtp.waitFor(1);
    expect(mails[0]!.subject).toContain(fleet.boxes[1]!.serial);
    const dead = connectionOf(rig.app.store).prepare("SELECT last_error FROM outbox WHERE status = 'dead'").pluck().all();
    expect(dead).toEqual(['unreadable outbox row (damaged JSON)']);
  });
});
