/**
 * A damaged row in the alert tables never stops polling or a notifier: it is set aside, logged
 * once and counted in /metrics (boxwatch_damaged_rows_total{table}); a damaged alert state keeps
 * what was announced (no second FIRING, its RESOLVED still sent).
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { startRig, type Rig } from './harness.js';
import { connectionOf } from '../helpers/sqlite.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

describe('damaged rows in the database', () => {
  it('a damaged firing alert state stays announced: no second FIRING, and its RESOLVED is sent when the box is back', async () => {
    rig = await startRig({ devices: 4 });
    const fleet = rig.sim.sim.fleet;
    const box = fleet.boxes[0]!;
    fleet.apply(fleet.boxes, { kind: 'connect' });
    await rig.cycle(0);
    fleet.apply([box], { kind: 'disconnect' });
    await rig.cycle();
    expect(rig.smtp.messages.map((m) => m.subject.slice(0, 9))).toEqual(['[FIRING] ']);
    // Damaged from another connection (another process, or a repair gone wrong) while the daemon runs.
    const other = new Database(rig.dbPath);
    other.prepare("UPDATE alert_states SET state = '{not json'").run();
    other.close();
    await rig.cycle();
    await rig.cycle();
    expect(rig.smtp.messages).toHaveLength(1); // still announced: nothing sent again
    fleet.apply([box], { kind: 'connect' });
    await rig.cycle();
    const mails = await rig.smtp.waitFor(2);
    expect(mails.map((m) => m.subject.slice(0, 10))).toEqual(['[FIRING] c', '[RESOLVED]']);
    expect(mails[1]!.subject).toContain(box.serial);
    expect(rig.app.store.damagedRows.counts()).toEqual([{ table: 'alert_states', count: 1 }]);
  });

  it('a damaged silence is set aside: polling goes on, the other silences still hold, and /metrics counts it once', async () => {
    rig = await startRig({ devices: 4, http: {} });
    const fleet = rig.sim.sim.fleet;
    const [a, b] = [fleet.boxes[0]!, fleet.boxes[1]!];
    fleet.apply(fleet.boxes, { kind: 'connect' });
    await rig.cycle(0);
    const now = rig.clock.now();
    rig.app.store.alerts.addSilence({ matchers: { boxes: [b.serial] }, startsAt: now, endsAt: now + 3_600_000, comment: 'maintenance' }, now);
    connectionOf(rig.app.store)
      .prepare("INSERT INTO silences (id, boxes, rules, starts_at, ends_at, comment, created_by, created_at) VALUES ('bad1', '[\"BX-', NULL, ?, ?, 'damaged', NULL, ?)")
      .run(now, now + 3_600_000, now);
    fleet.apply([a, b], { kind: 'disconnect' });
    await rig.cycle();
    await rig.cycle();
    expect(rig.app.store.lastCycle()).toMatchObject({ outcome: 'ok', startedAt: rig.clock.now() });
    const mails = await rig.smtp.waitFor(1);
    expect(mails.map((m) => m.subject)).toEqual([expect.stringContaining(a.serial)]); // b is silenced
    expect((await rig.app.alerts.silences(rig.clock.now())).map((s) => s.comment)).toEqual(['maintenance']);
    const metrics = await (await fetch(`${rig.app.httpUrl}/metrics`)).text();
    expect(metrics).toContain('boxwatch_damaged_rows_total{table="silences"} 1');
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
