/**
 * Decommissioned boxes leave: `boxwatch box forget SERIAL`, and the missing rule's forget_after.
 * A forgotten box keeps its history, leaves status, and its alerts resolve (RESOLVED sent once,
 * no more repeats); listed by the gateway again, it is back in the fleet.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { runCommand } from '../helpers/cli.js';
import { startRig, type Rig } from './harness.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const subjects = (r: Rig, serial: string): string[] => r.smtp.messages.map((m) => m.subject).filter((s) => s.includes(serial)).map((s) => s.split(']')[0]! + ']');

describe('forgetting a decommissioned box', () => {
  it('boxwatch box forget: the box leaves status, its missing alert resolves once and never repeats; its history stays', async () => {
    rig = await startRig({ devices: 3, yaml: 'rules:\n  - { name: box-missing, kind: missing, severity: warning }\nalerting: { group_wait: 0s, repeat_interval: 1h }' });
    const r = rig;
    const [gone, kept] = [r.sim.sim.fleet.boxes[0]!, r.sim.sim.fleet.boxes[1]!];
    r.sim.sim.fleet.apply(r.sim.sim.fleet.boxes, { kind: 'connect' });
    await r.cycle(0);

    // Refused while the gateway still lists the box, and for an unknown serial.
    const listed = await runCommand(['box', 'forget', gone.serial, '--db', r.dbPath]);
    expect(listed).toMatchObject({ code: 2, out: '' });
    expect(listed.err).toContain(`box ${gone.serial} is still in the gateway's device list`);
    expect((await runCommand(['box', 'forget', 'BX-NOPE', '--db', r.dbPath])).err).toContain('no box "BX-NOPE" in the database');

    r.sim.sim.fleet.apply([gone], { kind: 'listed', on: false });
    await r.cycle();
    expect(subjects(r, gone.serial)).toEqual(['[FIRING]']);
    await r.cycle(3_600_000); // a repeat after repeat_interval: the alert would go on for ever
    expect(subjects(r, gone.serial)).toEqual(['[FIRING]', '[FIRING]']);

    const forgot = await runCommand(['box', 'forget', gone.serial, '--db', r.dbPath]);
    expect(forgot.code).toBe(0);
    expect(forgot.out).toMatch(new RegExp(`^forgot box ${gone.serial} \\(missing since 2026-`));
    expect((await runCommand(['box', 'forget', gone.serial, '--db', r.dbPath])).out).toContain('was already forgotten');

    await r.cycle();
    expect(subjects(r, gone.serial)).toEqual(['[FIRING]', '[FIRING]', '[RESOLVED]']);
    for (let i = 0; i < 3; i++) await r.cycle(3_600_000);
    expect(subjects(r, gone.serial)).toHaveLength(3); // no more repeats
    expect(r.app.store.boxes().map((b) => b.serial)).not.toContain(gone.serial);
    expect(r.app.store.boxes().map((b) => b.serial)).toContain(kept.serial);
    const status = await runCommand(['status', '--db', r.dbPath, '--format', 'json']);
    expect(status.out).not.toContain(gone.serial);
    const history = await runCommand(['history', gone.serial, '--from', '2026-03-01', '--to', '2026-03-02', '--db', r.dbPath, '--format', 'json']);
    expect(history.err).toBe('');
    expect(history.out).toContain(gone.serial);
    expect(history.out).toMatch(/"value": ?\d+/); // its battery readings are still there

    // Listed again: back in the fleet.
    r.sim.sim.fleet.apply([gone], { kind: 'listed', on: true });
    await r.cycle();
    expect(r.app.store.boxes().map((b) => b.serial)).toContain(gone.serial);
  });

  it('forget_after on the missing rule: a box missing that long is forgotten, its alert resolved once', async () => {
    rig = await startRig({ devices: 3, yaml: 'rules:\n  - { name: box-missing, kind: missing, severity: warning, forget_after: 2h }\nalerting: { group_wait: 0s, repeat_interval: 1h }' });
    const r = rig;
    const gone = r.sim.sim.fleet.boxes[2]!;
    r.sim.sim.fleet.apply(r.sim.sim.fleet.boxes, { kind: 'connect' });
    await r.cycle(0);
    r.sim.sim.fleet.apply([gone], { kind: 'listed', on: false });
    await r.cycle();
    await r.cycle(3_600_000);
    expect(subjects(r, gone.serial)).toEqual(['[FIRING]', '[FIRING]']);
    expect(r.app.store.boxes().map((b) => b.serial)).toContain(gone.serial);
    await r.cycle(3_600_000); // missing for 2 h now: forgotten
    expect(subjects(r, gone.serial)).toEqual(['[FIRING]', '[FIRING]', '[RESOLVED]']);
    expect(r.app.store.boxes().map((b) => b.serial)).not.toContain(gone.serial);
    for (let i = 0; i < 3; i++) await r.cycle(3_600_000);
    expect(subjects(r, gone.serial)).toHaveLength(3);
  });
});
