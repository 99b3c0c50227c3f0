/**
 * `boxwatch silence add|list|expire` against a running daemon (the simulator, createApp on a real
 * SQLite file, real SMTP and Slack receivers): a silence written by the CLI holds back the
 * notification of a firing alert at the daemon's next cycle, and expiring it while the alert
 * still fires sends the firing notification then. Every usage error exits 2 and writes nothing.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { KEY, startCliRig, type CliRig } from './rig.js';
import { run, type Run } from './run.js';

let rig: CliRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

async function cli(r: CliRig, argv: string[]): Promise<Run> {
  const result = await run([...argv, '--config', r.configPath], r.env);
  expect(result.out + result.err).not.toContain(KEY);
  return result;
}

const mailsFor = (r: CliRig, serial: string): string[] => r.smtp.messages.map((m) => m.subject).filter((s) => s.includes(serial));
const slackFor = (r: CliRig, serial: string): number => r.slack.received.filter((w) => JSON.stringify(w.body).includes(serial)).length;

describe('boxwatch silence', () => {
  it('holds back a firing alert until it is expired, then notifies it', async () => {
    rig = await startCliRig();
    const serial = rig.sim.sim.fleet.boxes[0]!.serial;

    const added = await cli(rig, ['silence', 'add', '--box', serial, '--for', '2h', '--comment', 'replacing the battery', '--by', 'alice']);
    expect(added.code).toBe(0);
    const id = /^added silence (\w+): boxes /.exec(added.out)?.[1];
    expect(id).toBeDefined();
    expect(added.out).toContain('(2h; active now)');
    expect(added.out).toContain("the daemon applies it at its next cycle");

    const listed = await cli(rig, ['silence', 'list', '--format', 'json']);
    expect(JSON.parse(listed.out)).toEqual([
      expect.objectContaining({ id, state: 'active', boxes: [serial], rules: [], comment: 'replacing the battery', createdBy: 'alice' }),
    ]);

    rig.sim.sim.fleet.apply([rig.box(serial)], { kind: 'disconnect' });
    await rig.cycle();
    await rig.cycle();
    expect(mailsFor(rig, serial)).toEqual([]);
    expect(slackFor(rig, serial)).toBe(0);
    const alerts = await cli(rig, ['alerts', '--active']);
    expect(alerts.out).toMatch(new RegExp(`firing\\s+box-offline\\s+critical\\s+${serial}\\s.*silenced \\(${id}\\)`));

    const expired = await cli(rig, ['silence', 'expire', id!]);
    expect(expired).toMatchObject({ code: 0, err: '' });
    expect(expired.out).toContain(`expired silence ${id}`);
    expect(JSON.parse((await cli(rig, ['silence', 'list', '--format', 'json'])).out)).toEqual([]);
    expect(JSON.parse((await cli(rig, ['silence', 'list', '--all', '--format', 'json'])).out)).toEqual([expect.objectContaining({ id, state: 'expired' })]);

    await rig.cycle();
    await rig.smtp.waitFor(1);
    expect(mailsFor(rig, serial)).toEqual([expect.stringMatching(/^\[FIRING\] critical: /)]);
    expect(slackFor(rig, serial)).toBe(1);

    // Expiring again changes nothing and is not an error (scripts may repeat it).
    const again = await cli(rig, ['silence', 'expire', id!]);
    expect(again.code).toBe(0);
    expect(again.out).toContain('had already ended');
  });

  it('a rule silence matches every box of that rule, and warns about box globs that match nothing', async () => {
    rig = await startCliRig();
    const serial = rig.sim.sim.fleet.boxes[1]!.serial;
    rig.sim.sim.fleet.apply([rig.box(serial)], { kind: 'disconnect' });
    await rig.cycle();
    const mails = mailsFor(rig, serial).length;
    const added = await cli(rig, ['silence', 'add', '--rule', 'box-off*', '--box', 'XX-*', '--box', serial, '--for', '30m', '--comment', 'site work']);
    expect(added.code).toBe(0);
    expect(added.err).toBe('warning: no known box matches --box "XX-*" (the silence still applies to boxes that appear later)\n');
    expect(added.out).toContain(`it matches 1 open alert(s): box-offline ${serial}`);
    // Reconnect and disconnect again under the silence: neither resolved nor firing is sent.
    rig.sim.sim.fleet.apply([rig.box(serial)], { kind: 'connect' });
    await rig.cycle();
    rig.sim.sim.fleet.apply([rig.box(serial)], { kind: 'disconnect' });
    await rig.cycle();
    expect(mailsFor(rig, serial)).toHaveLength(mails);
  });

  it('a silence starting later is listed as pending', async () => {
    rig = await startCliRig();
    const start = new Date(Date.now() + 90 * 60_000).toISOString();
    const added = await cli(rig, ['silence', 'add', '--rule', 'battery-low', '--for', '1h', '--comment', 'later', '--start', start]);
    expect(added.code).toBe(0);
    expect(added.out).toContain('starts in 1h');
    const table = await cli(rig, ['silence', 'list']);
    expect(table.out).toMatch(/^ID\s+STATE\s+MATCHERS\s+STARTS\s+ENDS\s+BY\s+COMMENT\n\w+\s+pending\s+rules battery-low\s+/);
  });

  it('--force allows a silence of more than a year, and one that matches everything', async () => {
    rig = await startCliRig({ devices: 2 });
    const long = await cli(rig, ['silence', 'add', '--box', 'SN-*', '--for', '400d', '--comment', 'decommissioned site', '--force']);
    expect(long.code).toBe(0);
    const all = await cli(rig, ['silence', 'add', '--rule', '*', '--for', '1h', '--comment', 'maintenance', '--force']);
    expect(all.code).toBe(0);
    const listed = JSON.parse((await cli(rig, ['silence', 'list', '--format', 'json'])).out) as { rules: string[] }[];
    expect(listed.map((s) => s.rules)).toEqual(expect.arrayContaining([[], ['*']]));
  });

  describe('usage errors exit 2 and write nothing', () => {
    const cases: [string, string[], string][] = [
      ['no matcher', ['silence', 'add', '--for', '2h', '--comment', 'x'], 'give at least one --box GLOB or --rule NAME'],
      ['empty box', ['silence', 'add', '--box', ' ', '--for', '2h', '--comment', 'x'], '--box and --rule must not be empty'],
      ['no --for', ['silence', 'add', '--box', 'SN-1', '--comment', 'x'], '--for is required'],
      ['bad --for', ['silence', 'add', '--box', 'SN-1', '--for', 'soon', '--comment', 'x'], '--for: invalid duration "soon"'],
      ['zero --for', ['silence', 'add', '--box', 'SN-1', '--for', '0s', '--comment', 'x'], '--for: must be longer than 0s'],
      // Once stored ends_at = Infinity, after which `silence list` failed for good.
      ['huge --for', ['silence', 'add', '--box', 'SN-1', '--for', `${'9'.repeat(400)}d`, '--comment', 'x'], '--for: invalid duration'],
      ['--for over the limit', ['silence', 'add', '--box', 'SN-1', '--for', '4000d', '--comment', 'x', '--force'], '--for: duration "4000d" is longer than the limit of 3650d'],
      ['over a year', ['silence', 'add', '--box', 'SN-1', '--for', '400d', '--comment', 'x'], '--for 400d is longer than a year; add --force if you mean it'],
      ['everything', ['silence', 'add', '--rule', '*', '--for', '1h', '--comment', 'x'], 'this silence matches every box and every rule (the gateway alerts too); add --force if you mean it'],
      ['start out of range', ['silence', 'add', '--box', 'SN-1', '--for', '1h', '--comment', 'x', '--start', '2200-01-01'], '--start: time "2200-01-01" is outside the accepted range'],
      ['no comment', ['silence', 'add', '--box', 'SN-1', '--for', '2h'], '--comment is required'],
      ['blank comment', ['silence', 'add', '--box', 'SN-1', '--for', '2h', '--comment', '  '], '--comment is required'],
      ['unknown rule', ['silence', 'add', '--rule', 'batery-low', '--for', '2h', '--comment', 'x'], '--rule "batery-low" matches no configured rule (rules: box-offline, battery-low, gateway_unreachable'],
      ['bad start', ['silence', 'add', '--box', 'SN-1', '--for', '2h', '--comment', 'x', '--start', 'tomorrow'], '--start: invalid time "tomorrow"'],
      ['over already', ['silence', 'add', '--box', 'SN-1', '--for', '1h', '--comment', 'x', '--start', '2020-01-01T00:00:00Z'], 'the silence would have ended already'],
      ['unknown id', ['silence', 'expire', 'nope1234'], 'no silence with id "nope1234"'],
      ['glob class left open', ['silence', 'add', '--box', 'SN-[12', '--for', '1h', '--comment', 'x'], '--box: glob "SN-[12": "[" at position 4 is not closed by "]"'],
    ];
    let shared: CliRig;
    beforeAll(async () => {
      shared = await startCliRig({ devices: 2 });
    });
    afterAll(() => shared.close());
    it.each(cases)('%s', async (_name, argv, message) => {
      const r = await cli(shared, argv);
      expect(r.code).toBe(2);
      expect(r.err).toContain(`error: ${message}`);
      expect(r.out).toBe('');
      expect(JSON.parse((await cli(shared, ['silence', 'list', '--all', '--format', 'json'])).out)).toEqual([]);
    });
  });

  it('never creates a database (exit 1); a configuration that cannot be read exits 2', async () => {
    rig = await startCliRig({ devices: 2 });
    const elsewhere = join(rig.dir, 'elsewhere.yaml');
    const missingDb = join(rig.dir, 'missing', 'boxwatch.db');
    writeFileSync(elsewhere, readFileSync(rig.configPath, 'utf8').replace(rig.dbPath, missingDb));
    const r = await run(['silence', 'add', '--box', 'SN-1', '--for', '1h', '--comment', 'x', '--config', elsewhere], rig.env);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`no database at ${missingDb}`);
    expect(existsSync(missingDb)).toBe(false);
    const list = await run(['silence', 'list', '--db', missingDb], {});
    expect(list.code).toBe(1);
    const noConfig = await run(['silence', 'list', '--config', join(rig.dir, 'none.yaml')], {});
    expect(noConfig.code).toBe(2);
    expect(noConfig.err).toContain('no such file');
  });
});
