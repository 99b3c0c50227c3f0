/**
 * Acknowledgement from the outside: a daemon (the CLI rig: simulator over HTTP, a real SQLite
 * file, real SMTP and Slack receivers) with repeat_interval 1h; `boxwatch ack` on one alert and
 * `POST /api/acks` (admin token) on another. The acknowledged alerts stop repeating while an
 * unacknowledged one goes on; `alerts`, `status` and the API show the ack and its author; the
 * resolve is still sent and says who acknowledged it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningHttpServer } from '../../src/http/index.js';
import { KEY, startCliRig, startRigHttp, type CliRig } from './rig.js';
import { run, type Run } from './run.js';

const TOKEN = 'ack-test-admin-token-0123456789';
const HOUR = 3_600_000;

let rig: CliRig;
let http: RunningHttpServer;
let byCli: string; // acknowledged with `boxwatch ack`
let byApi: string; // acknowledged with POST /api/acks
let unacked: string; // never acknowledged: keeps repeating

async function cli(argv: string[]): Promise<Run> {
  const r = await run([...argv, '--config', rig.configPath], { ...rig.env, USER: 'alice' });
  expect(r.out + r.err).not.toContain(KEY);
  return r;
}

async function post(path: string, body: unknown, token?: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${http.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function get(path: string): Promise<Record<string, unknown>> {
  return (await (await fetch(`${http.url}${path}`)).json()) as Record<string, unknown>;
}

/** Messages about `serial` in the real SMTP server, by subject word: FIRING, RESOLVED, still firing. */
function mails(serial: string): string[] {
  return rig.smtp.messages.filter((m) => m.text.includes(serial)).map((m) => m.text);
}
const repeats = (serial: string): number => mails(serial).filter((t) => /STILL FIRING/.test(t)).length;

beforeAll(async () => {
  rig = await startCliRig({
    devices: 4,
    rules: `rules:
  - { name: box-offline, kind: disconnected, severity: critical }
alerting: { group_wait: 0s, repeat_interval: 1h }`,
  });
  http = await startRigHttp(rig, { adminToken: TOKEN });
  [byCli, byApi, unacked] = rig.sim.sim.fleet.boxes.map((b) => b.serial) as [string, string, string];
  rig.sim.sim.fleet.apply([rig.box(byCli), rig.box(byApi), rig.box(unacked)], { kind: 'disconnect' });
  await rig.cycle(1_000);
});
afterAll(async () => {
  await http.close();
  await rig.close();
});

describe('acknowledging', () => {
  it('boxwatch ack records the ack with its author and says what it does', async () => {
    expect(mails(byCli).filter((t) => /FIRING/.test(t))).toHaveLength(1);
    const r = await cli(['ack', `box-offline/${byCli}`, '--comment', 'technician on site', '--for', '4h']);
    expect(r).toMatchObject({ code: 0, err: '' });
    expect(r.out).toMatch(new RegExp(`^acknowledged box-offline/${byCli} by alice: no repeat notifications until \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC \\(or until it resolves\\); a higher severity ends the ack\\n$`));
  });

  it('bad acks exit 2 and record nothing', async () => {
    for (const args of [
      ['ack', `box-offline/${byCli}`],
      ['ack', `box-offline/${byCli}`, '--comment', 'x', '--for', 'a while'],
      ['ack', 'box-offline/NOPE', '--comment', 'x'],
    ]) {
      const r = await cli(args);
      expect(r.code).toBe(2);
      expect(r.err).toMatch(/^error: /);
    }
    expect(rig.app.store.acks.since(0)).toHaveLength(1);
  });

  it('POST /api/acks needs the admin token; with it the ack is recorded', async () => {
    const body = { alert: `box-offline/${byApi}`, comment: 'vendor ticket 4711', by: 'bob' };
    expect((await post('/api/acks', body)).status).toBe(401);
    expect((await post('/api/acks', body, 'wrong-token-wrong-token')).status).toBe(401);
    expect(await post('/api/acks', { ...body, alert: 'box-offline/NOPE' }, TOKEN)).toMatchObject({ status: 400 });
    const ok = await post('/api/acks', body, TOKEN);
    expect(ok).toMatchObject({ status: 201, body: { ack: { alert: `box-offline/${byApi}`, by: 'bob', comment: 'vendor ticket 4711', until: null } } });
    const list = (await get('/api/acks'))['acks'] as { alert: string; by: string }[];
    expect(list.map((a) => `${a.alert} ${a.by}`)).toEqual([`box-offline/${byApi} bob`, `box-offline/${byCli} alice`]);
  });

  it('alerts, status and the API show who acknowledged what', async () => {
    const alerts = await cli(['alerts']);
    const [header, ...rows] = alerts.out.trimEnd().split('\n');
    expect(header).toMatch(/\s+ACKED\s+NOTIFIED$/);
    expect(rows.find((l) => l.includes(byCli))).toMatch(/alice \(until .* UTC\): technician on site\s+ops-mail, ops-slack$/);
    expect(rows.find((l) => l.includes(byApi))).toMatch(/bob: vendor ticket 4711\s+ops-mail, ops-slack$/);
    expect(rows.find((l) => l.includes(unacked))).not.toMatch(/alice|bob/);

    const status = await cli(['status']);
    expect(status.out.split('\n').find((l) => l.startsWith(byCli))).toContain('box-offline! (acked by alice)');
    expect(status.out.split('\n').find((l) => l.startsWith(unacked))).toMatch(/box-offline!(\s|$)/);

    const fromApi = (await get('/api/alerts'))['alerts'] as { id: string; ack: unknown }[];
    expect(fromApi.find((a) => a.id === `box-offline/${byApi}`)?.ack).toMatchObject({ by: 'bob', comment: 'vendor ticket 4711', until: null });
    expect(fromApi.find((a) => a.id === `box-offline/${unacked}`)?.ack).toBeNull();
    const boxes = (await get('/api/boxes'))['boxes'] as { serial: string; alerts: { ack: { by: string } | null }[] }[];
    expect(boxes.find((b) => b.serial === byCli)?.alerts[0]?.ack).toMatchObject({ by: 'alice' });
    const json = JSON.parse((await cli(['alerts', '--format', 'json'])).out) as { alerts: { id: string; ack: unknown }[] };
    expect(json.alerts.find((a) => a.id === `box-offline/${byCli}`)?.ack).toMatchObject({ by: 'alice', comment: 'technician on site', until: expect.stringMatching(/Z$/) });
  });

  it('the acknowledged alerts stop repeating while the other repeats every hour', async () => {
    for (let i = 0; i < 6; i++) await rig.cycle(HOUR / 2); // three hours
    expect(repeats(unacked)).toBe(3);
    expect(repeats(byCli)).toBe(0);
    expect(repeats(byApi)).toBe(0);
  });

  it('the ack given for 4h expires: the alert repeats again', async () => {
    for (let i = 0; i < 3; i++) await rig.cycle(HOUR / 2); // 4.5 hours after the ack
    expect(repeats(byCli)).toBe(1);
    expect(repeats(byApi)).toBe(0); // until it resolves
    // (Read through the API: it runs on the daemon's clock, which the test moved 4.5 hours ahead.)
    const fromApi = (await get('/api/alerts'))['alerts'] as { id: string; ack: unknown }[];
    expect(fromApi.find((a) => a.id === `box-offline/${byCli}`)?.ack).toBeNull();
    expect(fromApi.find((a) => a.id === `box-offline/${byApi}`)?.ack).not.toBeNull();
  });

  it('the resolve of an acknowledged alert is still notified, and says who acknowledged it', async () => {
    rig.sim.sim.fleet.apply([rig.box(byApi)], { kind: 'connect' });
    await rig.cycle(1_000);
    const resolved = mails(byApi).filter((t) => /RESOLVED/.test(t));
    expect(resolved).toHaveLength(1);
    expect(resolved[0]).toContain('acknowledged by bob: vendor ticket 4711');
    const slack = JSON.stringify(rig.slack.received.at(-1)?.body);
    expect(slack).toContain('Acknowledged');
    expect(slack).toContain('bob: vendor ticket 4711');
  });
});
