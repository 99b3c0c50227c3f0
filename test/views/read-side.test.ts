/**
 * The read side from the outside: `/api/alerts`, `/api/boxes` and `boxwatch status` / `alerts`
 * over the database of a daemon polling the simulator (the CLI rig), through the real HTTP server
 * wired with the daemon's own reader. What an operator or a script sees: ISO 8601 UTC times,
 * printable alert ids, newest first, `since` honoured with `active=true`, missing boxes as missing.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/index.js';
import { startHttpServer, type RunningHttpServer } from '../../src/http/index.js';
import { silentLogger } from '../../src/log.js';
import { alertViewSource } from '../../src/views/alerts.js';
import { apiReader } from '../../src/views/api-reader.js';
import { startCliRig, type CliRig } from '../cli/rig.js';
import { run } from '../cli/run.js';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
let rig: CliRig;
let http: RunningHttpServer;
let first: string; // disconnected first: box-offline fires first
let second: string; // battery low two minutes later
let gone: string; // leaves the device list

async function get(path: string): Promise<{ status: number; text: string; body: Record<string, unknown> }> {
  const res = await fetch(`${http.url}${path}`);
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as Record<string, unknown> };
}

beforeAll(async () => {
  rig = await startCliRig({ devices: 5 });
  const config = parseConfig(readFileSync(rig.configPath, 'utf8'), rig.env, rig.configPath);
  http = await startHttpServer({
    listen: '127.0.0.1:0',
    store: rig.app.store,
    metrics: rig.app.metrics,
    clock: rig.clock,
    health: { maxCycleAgeMs: 60_000 },
    alerts: apiReader(alertViewSource(rig.app.store, rig.app.alerts), config, rig.clock),
    logger: silentLogger,
  });
  [first, second, gone] = rig.sim.sim.fleet.boxes.map((b) => b.serial) as [string, string, string];
  rig.sim.sim.fleet.apply([rig.box(first)], { kind: 'disconnect' });
  await rig.cycle(1_000);
  rig.sim.sim.fleet.apply([rig.box(second)], { kind: 'battery', level: 10 });
  await rig.cycle(120_000);
  rig.sim.sim.fleet.apply([rig.box(gone)], { kind: 'listed', on: false });
  await rig.cycle(30_000);
});
afterAll(async () => {
  await http.close();
  await rig.close();
});

describe('/api/alerts', () => {
  it('lists alerts newest first, times as ISO 8601 UTC, ids printable', async () => {
    const res = await get('/api/alerts');
    expect(res.status).toBe(200);
    expect(res.text).not.toContain('\\u0000');
    const alerts = res.body['alerts'] as Record<string, unknown>[];
    expect(alerts.map((a) => a['id'])).toEqual([`battery-low/${second}`, `box-offline/${first}`]);
    for (const a of alerts) {
      expect(a['since']).toMatch(ISO);
      expect(a['firingSince']).toMatch(ISO);
      for (const t of a['transitions'] as Record<string, unknown>[]) expect(t['at']).toMatch(ISO);
    }
    expect(Date.parse(alerts[0]!['since'] as string)).toBeGreaterThan(Date.parse(alerts[1]!['since'] as string));
  });

  it('honours since together with active=true', async () => {
    const all = (await get('/api/alerts?active=true')).body['alerts'] as Record<string, unknown>[];
    expect(all).toHaveLength(2);
    const recent = (await get('/api/alerts?active=true&since=1m')).body['alerts'] as Record<string, unknown>[];
    expect(recent.map((a) => a['id'])).toEqual([`battery-low/${second}`]);
  });
});

describe('box views', () => {
  it('/api/boxes gives each box its state word and open alerts, ISO times, missing boxes as missing', async () => {
    const boxes = (await get('/api/boxes')).body['boxes'] as Record<string, unknown>[];
    const bySerial = new Map(boxes.map((b) => [b['serial'], b]));
    expect(bySerial.get(gone)).toMatchObject({ state: 'missing', missingSince: expect.stringMatching(ISO) });
    expect(bySerial.get(first)).toMatchObject({ state: 'offline', alerts: [{ rule: 'box-offline', status: 'firing', severity: 'critical', since: expect.stringMatching(ISO) }] });
    expect(bySerial.get(second)).toMatchObject({ state: 'online', alerts: [expect.objectContaining({ rule: 'battery-low' })] });
    expect((await get(`/api/boxes/${gone}`)).body).toMatchObject({ serial: gone, state: 'missing' });
  });

  it('status shows a missing box as missing, not CONNECTED yes, and its JSON is the box view with ISO times only', async () => {
    const table = await run(['status', '--config', rig.configPath], rig.env);
    expect(table.code).toBe(0);
    const header = table.out.split('\n')[0]!;
    const line = table.out.split('\n').find((l) => l.startsWith(gone))!;
    const column = (name: string): string => line.slice(header.indexOf(name)).split(/\s{2,}/)[0]!;
    expect(column('CONNECTED')).toBe('missing');
    expect(column('STATE')).toMatch(/^missing since/);
    const json = JSON.parse((await run(['status', '--format', 'json', '--config', rig.configPath], rig.env)).out) as Record<string, unknown>[];
    const box = json.find((b) => b['serial'] === gone)!;
    expect(box['state']).toBe('missing');
    for (const key of ['lastSeen', 'firstSeen', 'lastPolled', 'missingSince']) expect(box[key]).toMatch(ISO);
    // every number in the answer is a measurement or an id, never a time
    const numbers = Object.entries(box).filter(([, v]) => typeof v === 'number').map(([k]) => k);
    expect(numbers.sort()).toEqual(['battery', 'id', 'signal'].filter((k) => typeof box[k] === 'number'));
  });

  it('alerts --format json and /api/alerts write the same alert view', async () => {
    const cli = JSON.parse((await run(['alerts', '--format', 'json', '--config', rig.configPath], rig.env)).out) as { alerts: Record<string, unknown>[] };
    const api = (await get('/api/alerts')).body['alerts'] as Record<string, unknown>[];
    const byId = (list: Record<string, unknown>[]) => new Map(list.map((a) => [a['id'], a]));
    expect(byId(cli.alerts)).toEqual(byId(api));
  });
});
