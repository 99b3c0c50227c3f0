/**
 * History that leaves the database: `boxwatch sql` and `boxwatch export`, run as the built CLI in
 * a child process against a real SQLite file that a running app (the CLI rig: simulator over real
 * HTTP, real SMTP and Slack receivers) keeps writing, as the daemon would. The OpenMetrics export
 * is backfilled into a real TSDB with Debian's promtool when it is installed.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type RawPoint, type SqliteStore } from '../../src/store/index.js';
import { startCliRig, type CliRig } from '../cli/rig.js';
import { MAIN, ROOT, ensureBuilt } from '../e2e/build.js';
import { connectionOf } from '../helpers/sqlite.js';

const PROMTOOL = '/usr/bin/promtool';
const HOSTILE_NAME = 'Lobby "A"\nrow\\2';
const CYCLES = 130; // 65 minutes at 30 s: at least one closed hour

let rig: CliRig;
let serials: string[];
let reader: SqliteStore;
/** Start of the cycle at which box 1's battery dropped to 12 %. */
let dropAt: number;
let outDir: string;

interface Cli {
  code: number;
  out: string;
  err: string;
}

async function cli(...args: string[]): Promise<Cli> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [MAIN, ...args], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, out: stdout, err: stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, out: e.stdout ?? '', err: e.stderr ?? '' };
  }
}

const sql = (query: string, ...more: string[]): Promise<Cli> => cli('sql', query, '--db', rig.dbPath, ...more);
const json = <T>(r: Cli): T => JSON.parse(r.out) as T;
const raw = (serial: string, metric: 'battery' | 'signal' | 'connected' | 'firmware', from: number, to: number): RawPoint[] =>
  reader.history(serial, metric, from, to, { kind: 'raw' }).points as RawPoint[];

/** Start of the oldest stored sample hour: where the stored history begins. */
const firstHour = (): number => (connectionOf(reader).prepare('SELECT min(hour) FROM samples').pluck().get() as number) * 3_600_000;

beforeAll(async () => {
  await ensureBuilt();
  rig = await startCliRig({ devices: 4 });
  serials = rig.sim.sim.fleet.boxes.map((b) => b.serial).sort();
  rig.box(serials[0]!).name = HOSTILE_NAME;
  for (let i = 1; i <= CYCLES; i++) {
    if (i === 20) {
      rig.sim.sim.fleet.apply([rig.box(serials[1]!)], { kind: 'battery', level: 12 });
      dropAt = rig.clock.now() + 30_000;
    }
    if (i === 60) rig.sim.sim.fleet.apply([rig.box(serials[2]!)], { kind: 'disconnect' });
    if (i === 80) rig.sim.sim.fleet.apply([rig.box(serials[2]!)], { kind: 'connect' });
    if (i === 100) rig.sim.sim.fleet.apply([rig.box(serials[3]!)], { kind: 'firmware', version: '9.9.9' });
    await rig.cycle();
  }
  reader = openStore(rig.dbPath, { readonly: true });
  outDir = mkdtempSync(join(tmpdir(), 'boxwatch-export-'));
}, 120_000);

afterAll(async () => {
  reader?.close();
  await rig?.close();
  if (outDir) rmSync(outDir, { recursive: true, force: true });
});

describe('boxwatch sql', () => {
  it('points() decodes one box and metric between ISO times: the runs the store answers', async () => {
    const from = new Date(dropAt - 10 * 60_000).toISOString();
    const to = new Date(dropAt + 10 * 60_000).toISOString();
    const r = await sql(`SELECT * FROM points('${serials[1]}', 'battery', '${from}', '${to}')`, '--format', 'json');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const rows = json<{ t: number; until: number; value: number; time: string }[]>(r);
    const expected = raw(serials[1]!, 'battery', Date.parse(from), Date.parse(to));
    expect(rows.map((p) => ({ t: p.t, value: p.value, until: p.until }))).toEqual(expected);
    // the drop to 12 % is a run starting at the cycle that saw it; the last run ends with the range
    expect(rows.find((p) => p.value === 12)).toMatchObject({ t: dropAt, time: new Date(dropAt).toISOString() });
    expect(rows.at(-1)?.until).toBe(Date.parse(to));
  });

  it('points() takes the whole stored span by default and SQL can aggregate it', async () => {
    const r = await sql(`SELECT count(*) AS runs, min(value) AS low FROM points('${serials[1]}', 'battery')`, '--format', 'json');
    expect(r.code).toBe(0);
    const [row] = json<{ runs: number; low: number }[]>(r);
    expect(row!.low).toBeLessThanOrEqual(12);
    const span = reader.lastCycle()!.startedAt + reader.maxGapMs;
    expect(row!.runs).toBe(raw(serials[1]!, 'battery', firstHour(), span).length);
  });

  it('points_all() covers every box matching the glob; a disconnection shows as connected = 0', async () => {
    const r = await sql(`SELECT serial, value, t, until FROM points_all('connected', '2000-01-01', '2099-12-31', '${serials[2]!.slice(0, -1)}?') ORDER BY serial, t`, '--format', 'json');
    expect(r.code).toBe(0);
    const rows = json<{ serial: string; value: number; t: number; until: number }[]>(r);
    expect(new Set(rows.map((x) => x.serial))).toEqual(new Set(serials.filter((s) => s.slice(0, -1) === serials[2]!.slice(0, -1))));
    const offline = rows.filter((x) => x.serial === serials[2] && x.value === 0);
    expect(offline).toHaveLength(1);
    expect(offline[0]!.until - offline[0]!.t).toBe(20 * 30_000);
  });

  it('the views: boxes, rollups of closed hours, alert transitions, notifications', async () => {
    const [boxesRun, rollupsRun, transitionsRun, notesRun] = await Promise.all([
      sql('SELECT serial, name FROM v_boxes ORDER BY serial', '--format', 'json'),
      sql(`SELECT * FROM v_rollups WHERE serial = '${serials[2]}'`, '--format', 'json'),
      sql("SELECT rule, serial, to_status FROM v_alert_transitions WHERE to_status = 'firing'", '--format', 'json'),
      sql('SELECT notifier, status FROM v_notifications', '--format', 'json'),
    ]);
    const boxes = json<{ serial: string; name: string }[]>(boxesRun);
    expect(boxes.map((b) => b.serial)).toEqual(serials);
    expect(boxes[0]!.name).toBe(HOSTILE_NAME);
    const rollups = json<{ serial: string; polls: number; connected_fraction: number; battery_mean: number }[]>(rollupsRun);
    expect(rollups.length).toBeGreaterThanOrEqual(1);
    expect(rollups.every((x) => x.polls > 0 && x.connected_fraction >= 0 && x.connected_fraction <= 1)).toBe(true);
    const transitions = json<{ rule: string; serial: string; to_status: string }[]>(transitionsRun);
    expect(transitions).toEqual(expect.arrayContaining([{ rule: 'battery-low', serial: serials[1], to_status: 'firing' }, { rule: 'box-offline', serial: serials[2], to_status: 'firing' }]));
    const notes = json<{ notifier: string; status: string }[]>(notesRun);
    expect(notes.map((n) => n.notifier)).toEqual(expect.arrayContaining(['ops-mail', 'ops-slack']));
    expect(notes.every((n) => n.status === 'delivered')).toBe(true);
  });

  it('prints an aligned table by default and CSV on request, control characters escaped', async () => {
    const [table, csv] = await Promise.all([sql(`SELECT serial, name FROM v_boxes WHERE serial = '${serials[0]}'`), sql(`SELECT serial, battery FROM v_boxes ORDER BY serial`, '--format', 'csv')]);
    expect(table.code).toBe(0);
    expect(table.out).toMatch(/^serial\s+name\n/);
    expect(table.out).toContain('Lobby "A"\\x0arow\\2');
    expect(csv.out.trim().split('\n')).toHaveLength(5);
    expect(csv.out.split('\n')[0]).toBe('serial,battery');
  });

  it('reads while the daemon writes: a cycle committed after the first query is seen by the next', async () => {
    const count = async (): Promise<number> => json<{ n: number }[]>(await sql('SELECT count(*) AS n FROM v_cycles', '--format', 'json'))[0]!.n;
    const before = await count();
    await rig.cycle();
    expect(await count()).toBe(before + 1);
  });

  it('refuses statements that write, and leaves the database as it was (exit 2)', async () => {
    const statements = ['DELETE FROM boxes', "INSERT INTO meta (key, value) VALUES ('x', 'y')", 'DROP VIEW v_boxes', 'CREATE TABLE t (x)', 'PRAGMA journal_mode = DELETE', "ATTACH 'other.db' AS o"];
    const runs = await Promise.all(statements.map((statement) => sql(statement)));
    for (const [i, r] of runs.entries()) {
      expect(r.code, statements[i]).toBe(2);
      expect(r.err, statements[i]).toMatch(/refused|readonly|read-only/i);
    }
    expect(reader.boxes()).toHaveLength(4);
    expect(connectionOf(reader).prepare("SELECT count(*) FROM sqlite_master WHERE name = 'v_boxes'").pluck().get()).toBe(1);
  });

  it('a bad query, a bad function argument or an unknown box is one error line and exit 2', async () => {
    const cases = [
      ['SELEC 1', /syntax error/],
      [`SELECT * FROM points('${serials[0]}', 'temperature')`, /unknown metric "temperature"/],
      [`SELECT * FROM points('${serials[0]}', 'battery', 'yesterday')`, /from: invalid time "yesterday"/],
      ["SELECT * FROM points('NOPE-1', 'battery')", /unknown box "NOPE-1"/],
    ] as const;
    const runs = await Promise.all(cases.map(([query]) => sql(query)));
    for (const [i, [query, message]] of cases.entries()) {
      expect(runs[i]!.code, query).toBe(2);
      expect(runs[i]!.err, query).toMatch(message);
    }
  });

  it('interrupts a long query after --timeout (exit 1)', async () => {
    const r = await sql('WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c', '--timeout', '1s');
    expect(r.code).toBe(1);
    expect(r.err).toContain('query interrupted after 1s (--timeout)');
  });
});

describe('boxwatch export', () => {
  it('csv: one line per run of every metric of every box, the same runs as the store', async () => {
    const r = await cli('export', '--format', 'csv', '--db', rig.dbPath);
    expect(r.code).toBe(0);
    expect(r.err).toBe('');
    const [header, ...lines] = r.out.trim().split('\n');
    expect(header).toBe('serial,metric,t,until,time,value');
    const span = reader.lastCycle()!.startedAt + reader.maxGapMs;
    const expected: string[] = [];
    for (const serial of serials) {
      for (const metric of ['battery', 'signal', 'connected', 'firmware'] as const) {
        for (const p of raw(serial, metric, firstHour(), span)) expected.push(`${serial},${metric},${p.t},${p.until},${new Date(p.t).toISOString()},${p.value ?? ''}`);
      }
    }
    expect(lines).toEqual(expected);
    // the firmware change is a second run that holds to the end of the stored span
    const firmware = lines.filter((l) => l.startsWith(`${serials[3]},firmware,`));
    expect(firmware).toHaveLength(2);
    expect(firmware[1]).toMatch(new RegExp(`,${span},[^,]+,9\\.9\\.9$`));
  });

  it('jsonl with --boxes, --metric and --from/--to: only those, within the range', async () => {
    const from = dropAt - 5 * 60_000;
    const to = dropAt + 5 * 60_000;
    const r = await cli('export', '--format', 'jsonl', '--db', rig.dbPath, '--boxes', serials[1]!, '--metric', 'battery', '--from', new Date(from).toISOString(), '--to', new Date(to).toISOString());
    expect(r.code).toBe(0);
    const rows = r.out.trim().split('\n').map((l) => JSON.parse(l) as { serial: string; metric: string; t: number; until: number; value: number });
    expect(rows.map((x) => ({ t: x.t, value: x.value, until: x.until }))).toEqual(raw(serials[1]!, 'battery', from, to));
    expect(new Set(rows.map((x) => `${x.serial}/${x.metric}`))).toEqual(new Set([`${serials[1]}/battery`]));
  });

  it('--boxes takes character classes ([37], [2-3], [!1]); a class left open is one line and exit 2', async () => {
    const prefix = serials[0]!.slice(0, -1); // the simulator's serials differ in their last digit
    expect(serials.every((s) => s.startsWith(prefix))).toBe(true);
    const last = serials.map((s) => s.slice(-1));
    const exported = async (glob: string): Promise<string[]> => {
      const r = await cli('export', '--format', 'csv', '--db', rig.dbPath, '--metric', 'connected', '--boxes', glob);
      expect(r.code).toBe(0);
      return [...new Set(r.out.trim().split('\n').slice(1).map((l) => l.split(',')[0]!))].sort();
    };
    const [set, range, negated] = await Promise.all([
      exported(`${prefix}[${last[1]}${last[3]}]`),
      exported(`${prefix}[${last[1]}-${last[2]}]`),
      exported(`${prefix}[!${last[0]}]`),
    ]);
    expect(set).toEqual([serials[1], serials[3]]);
    expect(range).toEqual([serials[1], serials[2]]);
    expect(negated).toEqual(serials.slice(1));
    const open = await cli('export', '--format', 'csv', '--db', rig.dbPath, '--boxes', `${prefix}[${last[1]}`);
    expect(open.code).toBe(2);
    expect(open.out).toBe('');
    expect(open.err.trim().split('\n')[0]).toBe(`error: --boxes: glob "${prefix}[${last[1]}": "[" at position ${prefix.length + 1} is not closed by "]" (a character class is [abc], [a-z] or [!x])`);
  });

  it('--out writes the file (and no partial file), and progress stays off when stderr is not a terminal', async () => {
    const file = join(outDir, 'history.csv');
    const r = await cli('export', '--format', 'csv', '--db', rig.dbPath, '--out', file, '--metric', 'connected');
    expect(r.code).toBe(0);
    expect(r.out).toBe('');
    expect(r.err).toBe('');
    expect(readFileSync(file, 'utf8').split('\n')[0]).toBe('serial,metric,t,until,time,value');
    expect(readdirSync(outDir).filter((f) => f.endsWith('.partial'))).toEqual([]);
  });

  it.skipIf(!existsSync('/usr/bin/script'))('on a terminal, progress goes to stderr', async () => {
    // script(1) runs the command on a pseudo-terminal and copies what it printed
    const command = `${process.execPath} ${MAIN} export --format csv --db ${rig.dbPath} --out ${join(outDir, 'tty.csv')}`;
    const { stdout } = await promisify(execFile)('/usr/bin/script', ['-qec', command, '/dev/null'], { cwd: ROOT });
    expect(stdout).toContain('exporting: 4/4 boxes (100%)');
  });

  it('a bad --metric or a missing --format is one line and exit 2', async () => {
    const [metric, r] = await Promise.all([cli('export', '--format', 'csv', '--db', rig.dbPath, '--metric', 'temperature'), cli('export', '--db', rig.dbPath)]);
    expect(metric.code).toBe(2);
    expect(r.code).toBe(2);
    expect(r.err).toContain('--format');
  });

  it.skipIf(!existsSync(PROMTOOL))('openmetrics: one sample per poll, backfilled by promtool into a TSDB that holds the same samples', async () => {
    const file = join(outDir, 'history.om');
    const r = await cli('export', '--format', 'openmetrics', '--db', rig.dbPath, '--out', file);
    expect(r.code).toBe(0);
    const text = readFileSync(file, 'utf8');
    expect(text.endsWith('# EOF\n')).toBe(true);
    const tsdb = join(outDir, 'tsdb');
    mkdirSync(join(tsdb, 'wal'), { recursive: true }); // promtool tsdb dump expects one
    await promisify(execFile)(PROMTOOL, ['tsdb', 'create-blocks-from', 'openmetrics', file, tsdb], { maxBuffer: 64 * 1024 * 1024 });
    const { stdout } = await promisify(execFile)(PROMTOOL, ['tsdb', 'dump', tsdb], { maxBuffer: 256 * 1024 * 1024 });
    const dumped = stdout.trim().split('\n');
    const samples = text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    expect(dumped).toHaveLength(samples.length);
    // box 1's battery: one sample per ok cycle, 12 from the drop on
    const okCycles = connectionOf(reader).prepare("SELECT started_at FROM cycles WHERE outcome = 'ok' ORDER BY started_at").pluck().all() as number[];
    const battery = dumped.filter((l) => l.includes('__name__="boxwatch_box_battery_percent"') && l.includes(`serial="${serials[1]}"`));
    const points = battery.map((l) => ({ t: Number(l.split(' ').at(-1)), value: Number(l.split(' ').at(-2)) }));
    expect(points.map((p) => p.t)).toEqual(okCycles);
    expect(points.every((p) => reader.valueAt(serials[1]!, 'battery', p.t)?.value === p.value)).toBe(true);
    expect(points.find((p) => p.value === 12)?.t).toBe(dropAt);
    // the hostile name survives as a label value; firmware is an info metric with a version label
    expect(dumped.some((l) => l.includes('name="Lobby \\"A\\"\\nrow\\\\2"'))).toBe(true);
    expect(dumped.some((l) => l.includes('__name__="boxwatch_box_firmware_info"') && l.includes('version="9.9.9"'))).toBe(true);
  }, 120_000);
});

if (!existsSync(PROMTOOL)) console.warn(`promtool not found at ${PROMTOOL}: the OpenMetrics backfill test is skipped`);
