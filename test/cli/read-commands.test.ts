/**
 * status, history and uptime over a real database written by the daemon polling the simulator.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { defaultConfig } from '../../src/config/index.js';
import { silentLogger } from '../../src/log.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { registerHistory } from '../../src/cli/history.js';
import { registerRun } from '../../src/cli/run.js';
import { registerStatus } from '../../src/cli/status.js';
import { registerUptime } from '../../src/cli/uptime.js';
import { runCommand as runWith } from '../helpers/cli.js';

const runCommand = (argv: string[], env: NodeJS.ProcessEnv = {}) => runWith(argv, env, [registerStatus, registerHistory, registerUptime, registerRun]);

const KEY = 'read-commands-key';
let dir: string;
let db: string;
let sim: RunningSimulator;
let lowSerial: string;
let offlineSerial: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-cli-'));
  db = join(dir, 'boxwatch.db');
  sim = await startSimulator({ port: 0, key: KEY, devices: 6, seed: 2 });
  const fleet = sim.sim.fleet;
  fleet.apply(fleet.boxes, { kind: 'connect' });
  const config = defaultConfig(KEY);
  config.gateway.baseUrl = sim.url;
  config.gateways[0]!.baseUrl = sim.url; // the account the daemon polls
  config.storage.path = db;
  config.http.enabled = false;
  const app = createApp({ config, logger: silentLogger, notifiers: [] });
  lowSerial = fleet.boxes[1]!.serial;
  offlineSerial = fleet.boxes[4]!.serial;
  for (const level of [60, 40, 12]) {
    fleet.apply([fleet.boxes[1]!], { kind: 'battery', level });
    await app.runOnce();
  }
  fleet.apply([fleet.boxes[4]!], { kind: 'disconnect' });
  await app.runOnce();
  await app.stop();
  writeFileSync(join(dir, 'boxwatch.yaml'), `gateway: { base_url: "${sim.url}", secret_key: "\${BOXWATCH_SECRET_KEY}" }\nstorage: { path: "${db}" }\n`);
});

afterAll(async () => {
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('boxwatch status', () => {
  it('lists every box, the boxes in trouble first', async () => {
    const r = await runCommand(['status', '--db', db]);
    expect(r.code).toBe(0);
    const lines = r.out.trim().split('\n');
    expect(lines[0]).toMatch(/^SERIAL\s+NAME\s+CONNECTED\s+BATTERY\s+SIGNAL\s+LAST SEEN\s+FIRMWARE/);
    expect(lines).toHaveLength(7);
    // the disconnected box and the low battery come before every healthy box
    const top = lines.slice(1, 3).join('\n');
    expect(top).toContain(offlineSerial);
    expect(top).toContain(lowSerial);
    expect(top).toContain('12%');
    // the STATE column says what the box is, as the JSON's state does
    expect(lines.find((l) => l.startsWith(offlineSerial))).toMatch(/\soffline$/);
    expect(lines.find((l) => l.startsWith(lowSerial))).toMatch(/\sonline$/);
  });

  it('prints JSON, and reads the database the configuration names', async () => {
    const r = await runCommand(['status', '--format', 'json', '--config', join(dir, 'boxwatch.yaml')], { BOXWATCH_SECRET_KEY: 'x' });
    expect(r.code).toBe(0);
    const boxes = JSON.parse(r.out) as { serial: string; connected: boolean }[];
    expect(boxes).toHaveLength(6);
    expect(boxes.find((b) => b.serial === offlineSerial)?.connected).toBe(false);
  });

  it('a missing configuration is a usage error (exit 2) naming the file', async () => {
    const r = await runCommand(['status', '--config', join(dir, 'nope.yaml')]);
    expect(r.code).toBe(2);
    expect(r.err).toContain('nope.yaml');
  });

  it('rejects an unknown format with exit 2', async () => {
    const r = await runCommand(['status', '--db', db, '--format', 'xml']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/xml/);
  });

  it('a database that does not exist is reported, not created', async () => {
    const r = await runCommand(['status', '--db', join(dir, 'absent.db')]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/no database/);
  });
});

describe('boxwatch history', () => {
  it('shows the battery points of one box with a sparkline', async () => {
    const r = await runCommand(['history', lowSerial, '--db', db, '--since', '1h']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^TIME\s+BATTERY/);
    for (const v of ['60', '40', '12']) expect(r.out).toMatch(new RegExp(`\\s${v}\\n`));
    expect(r.out).toMatch(/[▁▂▃▄▅▆▇█]+ {2}\S+ battery, /);
  });

  it('writes CSV and JSON', async () => {
    const csv = await runCommand(['history', lowSerial, '--db', db, '--format', 'csv']);
    expect(csv.out.split('\n')[0]).toBe('TIME,BATTERY');
    const json = await runCommand(['history', lowSerial, '--db', db, '--format', 'json', '--metric', 'connected']);
    const parsed = JSON.parse(json.out) as { kind: string; points: { value: number }[] };
    expect(parsed.kind).toBe('raw');
    expect(parsed.points.every((p) => p.value === 1)).toBe(true);
  });

  it('writes every time in its JSON as ISO 8601 UTC, as the HTTP API does', async () => {
    const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
    for (const argv of [['--since', '1h'], ['--since', '30d']]) {
      const r = await runCommand(['history', lowSerial, '--db', db, '--format', 'json', ...argv]);
      const parsed = JSON.parse(r.out) as { kind: string; from: unknown; to: unknown; points: { t: unknown; until?: unknown }[] };
      expect(parsed.from).toMatch(ISO);
      expect(parsed.to).toMatch(ISO);
      expect(Date.parse(parsed.to as string) - Date.parse(parsed.from as string)).toBe(argv[1] === '1h' ? 3_600_000 : 30 * 86_400_000);
      expect(parsed.points.length).toBeGreaterThan(0);
      for (const p of parsed.points) {
        expect(p.t).toMatch(ISO);
        if (p.until !== undefined && p.until !== null) expect(p.until).toMatch(ISO);
      }
    }
  });

  it.each([
    [['history', 'NO-SUCH-BOX'], /unknown box serial "NO-SUCH-BOX"/],
    [['history', '@serial', '--metric', 'temperature'], /unknown metric "temperature"/],
    [['history', '@serial', '--since', 'yesterday'], /--since: invalid duration/],
    [['history', '@serial', '--from', 'not-a-date'], /--from: invalid/],
    [['history', '@serial', '--from', '2026-03-02T00:00:00Z', '--to', '2026-03-01T00:00:00Z'], /--from must be before --to/],
    [['history', '@serial', '--since', '1h', '--from', '2026-03-01T00:00:00Z'], /either --since or --from/],
    [['history'], /missing required argument/],
  ])('%j: clear message and exit 2', async (argv, message) => {
    const r = await runCommand([...argv.map((a) => (a === '@serial' ? lowSerial : a)), '--db', db]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(message);
  });
});

describe('boxwatch uptime', () => {
  it('gives the connected fraction per box, least available first', async () => {
    const r = await runCommand(['uptime', '--db', db, '--format', 'json']);
    expect(r.code).toBe(0);
    const rows = JSON.parse(r.out) as { serial: string; connectedFraction: number | null }[];
    expect(rows).toHaveLength(6);
    expect(rows.filter((x) => x.serial !== offlineSerial).every((x) => x.connectedFraction === 1)).toBe(true);
    const table = await runCommand(['uptime', '--db', db]);
    expect(table.out).toMatch(/^SERIAL\s+NAME\s+UPTIME\s+OBSERVED/);
  });

  it('rejects a bad --since with exit 2', async () => {
    const r = await runCommand(['uptime', '--db', db, '--since', '-3d']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('--since');
  });
});

describe('boxwatch run', () => {
  it('exits 2 and names every bad field of an invalid configuration', async () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'gateway: { secret_key: k, timeout: 5x }\npoll: { details_every: soon }\n');
    const r = await runCommand(['run', '--config', file]);
    expect(r.code).toBe(2);
    expect(r.err).toContain('gateway.timeout');
    expect(r.err).toContain('poll.details_every');
    expect(r.err).not.toMatch(/\n\s+at /); // no stack trace
  });
});
