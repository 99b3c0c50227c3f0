/**
 * `boxwatch alerts` and the ALERTS column of `boxwatch status`, read from the SQLite file of a
 * running daemon (simulator + createApp): what is firing, pending, resolved and held back, the
 * transitions, JSON, ordering, escaping of box names, and usage errors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY, startCliRig, type CliRig } from './rig.js';
import { run, type Run } from './run.js';

let rig: CliRig;
let offline: string; // disconnected: box-offline firing; its name has a terminal escape
let recovered: string; // battery low, then recharged: battery-low resolved
let inhibited: string; // battery low, then disconnected: box-offline firing, battery-low inhibited

async function cli(argv: string[]): Promise<Run> {
  const result = await run([...argv, '--config', rig.configPath], rig.env);
  expect(result.out + result.err).not.toContain(KEY);
  expect(result.out).not.toContain('\u001b');
  return result;
}

beforeAll(async () => {
  rig = await startCliRig({ devices: 6 });
  const [a, b, c] = rig.sim.sim.fleet.boxes.map((box) => box.serial);
  [offline, recovered, inhibited] = [a!, b!, c!];
  rig.box(offline).name = 'Lobby\u001b[2J';
  rig.sim.sim.fleet.apply([rig.box(offline)], { kind: 'disconnect' });
  rig.sim.sim.fleet.apply([rig.box(recovered), rig.box(inhibited)], { kind: 'battery', level: 10 });
  await rig.cycle(1_000);
  rig.sim.sim.fleet.apply([rig.box(recovered)], { kind: 'battery', level: 60 });
  rig.sim.sim.fleet.apply([rig.box(inhibited)], { kind: 'disconnect' });
  await rig.cycle(1_000);
});
afterAll(() => rig.close());

describe('boxwatch alerts', () => {
  it('lists open alerts first, then resolved ones, with held-back reasons and escaped names', async () => {
    const r = await cli(['alerts']);
    expect(r).toMatchObject({ code: 0, err: '' });
    const lines = r.out.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^STATE\s+RULE\s+SEVERITY\s+BOX\s+NAME\s+SINCE\s+VALUE\s+SUMMARY\s+HELD BACK\s+ACKED\s+NOTIFIED$/);
    const rows = lines.slice(1);
    expect(rows).toHaveLength(4);
    // firing critical first (two box-offline), then firing warning, then resolved
    expect(rows.slice(0, 2).every((l) => /^firing\s+box-offline\s+critical/.test(l))).toBe(true);
    expect(rows.find((l) => l.includes(offline))).toContain('Lobby\\x1b[2J');
    expect(rows[2]).toMatch(new RegExp(`^firing\\s+battery-low\\s+warning\\s+${inhibited}\\s.*10%.*inhibited by box-offline\\s+ops-mail, ops-slack$`)); // notified before it was inhibited
    expect(rows[3]).toMatch(new RegExp(`^resolved\\s+battery-low\\s+warning\\s+${recovered}\\s.*60%`));
    expect(r.out).not.toContain('transitions since');
  });

  it('--active shows only pending and firing alerts', async () => {
    const r = await cli(['alerts', '--active']);
    expect(r.out).not.toContain(recovered);
    expect(r.out.trimEnd().split('\n')).toHaveLength(4);
  });

  it('--since adds the transitions, oldest first', async () => {
    const r = await cli(['alerts', '--since', '1h']);
    const section = r.out.slice(r.out.indexOf('transitions since'));
    const rows = section.trimEnd().split('\n').slice(2);
    expect(section.split('\n')[1]).toMatch(/^TIME\s+RULE\s+BOX\s+CHANGE\s+VALUE\s+SUMMARY\s+HELD BACK$/);
    expect(rows).toHaveLength(5); // 3 x inactive -> firing, firing -> resolved, box-offline of the third box
    expect(rows.filter((l) => l.includes('inactive -> firing'))).toHaveLength(4);
    expect(rows.at(-2)! + rows.at(-1)!).toContain('firing -> resolved');
    expect(rows.every((l, i) => i === 0 || l.slice(0, 20) >= rows[i - 1]!.slice(0, 20))).toBe(true);
  });

  it('--format json gives every field and the transitions of each alert', async () => {
    const r = await cli(['alerts', '--format', 'json']);
    const json = JSON.parse(r.out) as { alerts: Record<string, unknown>[] };
    const battery = json.alerts.find((a) => a['box'] === inhibited && a['rule'] === 'battery-low');
    expect(battery).toMatchObject({
      kind: 'low_battery',
      severity: 'warning',
      state: 'firing',
      open: true,
      value: 10,
      id: `battery-low/${inhibited}`,
      since: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      heldBack: { reason: 'inhibited', by: [`box-offline/${inhibited}`] },
      transitions: [expect.objectContaining({ from: 'inactive', to: 'firing', value: 10, heldBack: null })],
    });
    const resolved = json.alerts.find((a) => a['box'] === recovered);
    expect(resolved).toMatchObject({ state: 'resolved', open: false, heldBack: null, resolvedAt: expect.any(String) });
    expect((resolved!['transitions'] as unknown[]).map((t) => (t as { to: string }).to)).toEqual(['firing', 'resolved']);
    expect(json.alerts.find((a) => a['box'] === offline)).toMatchObject({ name: 'Lobby\u001b[2J', state: 'firing' });
  });

  it('usage errors exit 2', async () => {
    expect((await cli(['alerts', '--since', 'last week'])).code).toBe(2);
    expect((await cli(['alerts', '--format', 'xml'])).code).toBe(2);
  });
});

describe('boxwatch status with alerts', () => {
  it('boxes with firing alerts sort first and list their open alerts', async () => {
    const r = await cli(['status']);
    expect(r.code).toBe(0);
    const lines = r.out.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^SERIAL\s+NAME\s+CONNECTED\s+BATTERY\s+SIGNAL\s+LAST SEEN\s+FIRMWARE\s+CALLS FAILED\s+ALERTS\s+STATE$/);
    const firstTwo = lines.slice(1, 3);
    expect(firstTwo.find((l) => l.startsWith(inhibited))).toMatch(/box-offline!, battery-low!/);
    expect(firstTwo.find((l) => l.startsWith(offline))).toMatch(/Lobby\\x1b\[2J.*box-offline!/);
    expect(lines.find((l) => l.startsWith(recovered))).not.toMatch(/battery-low/);
  });

  it('JSON includes each box\'s open alerts', async () => {
    const boxes = JSON.parse((await cli(['status', '--format', 'json'])).out) as { serial: string; alerts: { rule: string; status: string }[] }[];
    expect(boxes[0]!.alerts.length).toBeGreaterThan(0);
    expect(boxes.find((b) => b.serial === inhibited)!.alerts.map((a) => `${a.rule}:${a.status}`)).toEqual(['box-offline:firing', 'battery-low:firing']);
    expect(boxes.find((b) => b.serial === recovered)!.alerts).toEqual([]);
  });

  it('shows the gateway alerts after the table, and alerts shows them without a box', async () => {
    rig.sim.sim.rotateKey('another-key-entirely');
    await rig.cycle(1_000);
    const status = await cli(['status']);
    expect(status.out).toMatch(/\ngateway alerts: gateway_unauthorized! \(the gateway rejects the account secret key/);
    const alerts = await cli(['alerts', '--active']);
    expect(alerts.out).toMatch(/\nfiring\s+gateway_unauthorized\s+critical\s+\(gateway\)\s/);
    // per-box alerts are frozen and held back while the gateway is down
    expect(alerts.out).toMatch(new RegExp(`firing\\s+box-offline\\s+critical\\s+${offline}\\s.*gateway down`));
  });
});

describe('boxwatch alerts without alerts', () => {
  it('says so, and --db reads a database without a configuration', async () => {
    const quiet = await startCliRig({ devices: 2 });
    try {
      const r = await run(['alerts', '--config', quiet.configPath], quiet.env);
      expect(r).toMatchObject({ code: 0, err: '' });
      expect(r.out).toMatch(/^no alerts since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\n$/);
      expect((await run(['alerts', '--active', '--db', quiet.dbPath])).out).toBe('no active alerts\n');
      expect(JSON.parse((await run(['alerts', '--format', 'json', '--db', quiet.dbPath])).out)).toMatchObject({ alerts: [] });
    } finally {
      await quiet.close();
    }
  });
});
