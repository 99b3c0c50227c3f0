/**
 * The notification log from the outside: a daemon (the CLI rig: simulator over HTTP, a real SQLite
 * file, a real SMTP server and a real Slack receiver) delivers, retries and gives up; then
 * `boxwatch notifications` (table, filters, JSON), `/api/notifications` through the real HTTP
 * server (the same view: identical JSON), and `boxwatch alerts` / `/api/alerts` saying where each
 * alert was delivered. The Slack URL's secret path never shows, not even when Slack quotes it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SLACK_TEST_PATH } from '../helpers/slack-receiver.js';
import type { RunningHttpServer } from '../../src/http/index.js';
import { KEY, startCliRig, startRigHttp, type CliRig } from './rig.js';
import { run, type Run } from './run.js';

let rig: CliRig;
let http: RunningHttpServer;
let delivered: string; // box-offline: delivered to both
let dead: string; // box-offline: Slack answers 404 (quoting its URL): given up at once
let pending: string; // battery-low: Slack answers 500: waiting for its next try

async function cli(argv: string[]): Promise<Run> {
  const r = await run([...argv, '--config', rig.configPath], rig.env);
  for (const secret of [KEY, 's3cr3tW3bh00kT0k3n', SLACK_TEST_PATH]) expect(r.out + r.err).not.toContain(secret);
  return r;
}

async function api(path: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${http.url}${path}`);
  const text = await res.text();
  expect(text).not.toContain('s3cr3tW3bh00kT0k3n');
  return { status: res.status, ...(JSON.parse(text) as Record<string, unknown>) };
}

interface NotificationJson {
  notifier: string;
  status: string;
  attempts: number;
  deliveredAt: string | null;
  gaveUpAt: string | null;
  nextAttemptAt: string | null;
  lastError: string | null;
  items: { alert: string; status: string }[];
}

beforeAll(async () => {
  rig = await startCliRig({ devices: 4 });
  http = await startRigHttp(rig);
  [delivered, dead, pending] = rig.sim.sim.fleet.boxes.map((b) => b.serial) as [string, string, string];
  rig.sim.sim.fleet.apply([rig.box(delivered)], { kind: 'disconnect' });
  await rig.cycle(1_000);
  rig.slack.respondWith({ status: 404, body: `no_service: no such webhook ${SLACK_TEST_PATH}` }, 1);
  rig.sim.sim.fleet.apply([rig.box(dead)], { kind: 'disconnect' });
  await rig.cycle(60_000);
  rig.slack.respondWith({ status: 500, body: 'internal_error' });
  rig.sim.sim.fleet.apply([rig.box(pending)], { kind: 'battery', level: 10 });
  await rig.cycle(60_000);
});
afterAll(async () => {
  await http.close();
  await rig.close();
});

describe('boxwatch notifications', () => {
  it('lists every message per notifier, newest first, with status, attempts, delivery time, alerts and the redacted last error', async () => {
    const r = await cli(['notifications']);
    expect(r).toMatchObject({ code: 0, err: '' });
    const [header, ...rows] = r.out.trimEnd().split('\n');
    expect(header).toMatch(/^CREATED\s+NOTIFIER\s+STATUS\s+ATTEMPTS\s+DELIVERED\s+ALERTS\s+LAST ERROR$/);
    expect(rows).toHaveLength(7); // 3 alert messages to each notifier, and the report of Slack's dead message by mail
    const row = (notifier: string, alert: string): string => rows.find((l) => l.includes(` ${notifier} `) && l.includes(alert)) ?? '';
    expect(row('ops-mail', `box-offline/${delivered}`)).toMatch(/ops-mail\s+delivered\s+1\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\s+box-offline\/\S+ firing$/);
    expect(row('ops-slack', `box-offline/${delivered}`)).toMatch(/ops-slack\s+delivered\s+1\s+\d{4}-/);
    expect(row('ops-slack', `box-offline/${dead}`)).toMatch(/ops-slack\s+dead\s+1\s+gave up \d{4}-.*firing\s+notifier "ops-slack": .*404.*no_service.*\[redacted\]/);
    expect(row('ops-slack', `battery-low/${pending}`)).toMatch(/ops-slack\s+pending\s+1\s+next try in \S+\s+battery-low\/\S+ firing\s+notifier "ops-slack": .*500/);
    expect(rows.filter((l) => /^\S+ \S+ UTC\s+ops-mail\s+delivered\s+1\s+\S+ \S+ UTC\s+-$/.test(l))).toHaveLength(1); // the delivery-failure report
    // newest first: the battery messages were created last
    expect(rows[0]).toContain('battery-low');
  });

  it('--notifier, --status and --alert narrow the list', async () => {
    const slackDead = await cli(['notifications', '--notifier', 'ops-slack', '--status', 'dead']);
    expect(slackDead.out.trimEnd().split('\n').slice(1)).toEqual([expect.stringContaining(`box-offline/${dead}`)]);
    const mail = await cli(['notifications', '--notifier', 'ops-mail']);
    expect(mail.out.trimEnd().split('\n')).toHaveLength(5);
    const one = await cli(['notifications', '--alert', `box-offline/${delivered}`]);
    const rows = one.out.trimEnd().split('\n').slice(1);
    expect(rows).toHaveLength(2);
    expect(rows.every((l) => l.includes(`box-offline/${delivered}`) && / delivered /.test(l))).toBe(true);
    expect((await cli(['notifications', '--status', 'pending', '--notifier', 'ops-mail'])).out).toMatch(/^no notifications since /);
  });

  it('bad arguments print the error (and where to look) and exit 2', async () => {
    for (const args of [
      ['--status', 'lost'],
      ['--since', 'yesterday'],
      ['--format', 'xml'],
    ]) {
      const r = await cli(['notifications', ...args]);
      expect(r.code).toBe(2);
      expect(r.out).toBe('');
      expect(r.err).toMatch(/^error: .*\nsee boxwatch notifications --help\n$/);
    }
    expect((await cli(['notifications', '--status', 'lost'])).err).toMatch(/^error: --status must be one of delivered, pending, sending, dead, not "lost"\n/);
  });

  it('--format json is the view /api/notifications serves, field for field', async () => {
    const r = await cli(['notifications', '--format', 'json', '--since', '1h']);
    const fromCli = (JSON.parse(r.out) as { notifications: NotificationJson[] }).notifications;
    const fromApi = (await api('/api/notifications?since=1h'))['notifications'] as NotificationJson[];
    expect(fromApi).toEqual(fromCli);
    expect(fromCli).toHaveLength(7);
    const deadOne = fromCli.find((n) => n.status === 'dead');
    expect(deadOne).toMatchObject({
      notifier: 'ops-slack',
      attempts: 1,
      deliveredAt: null,
      gaveUpAt: expect.stringMatching(/Z$/),
      items: [{ alert: `box-offline/${dead}`, status: 'firing' }],
    });
    expect(deadOne?.lastError).toContain('[redacted]');
    expect(fromCli.find((n) => n.status === 'pending')).toMatchObject({ nextAttemptAt: expect.stringMatching(/Z$/), deliveredAt: null });
    expect(fromCli.filter((n) => n.status === 'delivered').every((n) => n.deliveredAt !== null && n.attempts === 1)).toBe(true);
  });

  it('/api/notifications takes the same filters and refuses a bad status', async () => {
    const slackDead = (await api('/api/notifications?notifier=ops-slack&status=dead'))['notifications'] as NotificationJson[];
    expect(slackDead.map((n) => n.items[0]?.alert)).toEqual([`box-offline/${dead}`]);
    const byAlert = (await api(`/api/notifications?alert=${encodeURIComponent(`battery-low/${pending}`)}`))['notifications'] as NotificationJson[];
    expect(byAlert.map((n) => `${n.notifier}:${n.status}`).sort()).toEqual(['ops-mail:delivered', 'ops-slack:pending']);
    expect((await api('/api/notifications?status=lost'))['status']).toBe(400);
  });
});

describe('where each alert was delivered', () => {
  it('boxwatch alerts: a NOTIFIED column, delivered notifiers by name, the others with their state', async () => {
    const r = await cli(['alerts']);
    const [header, ...rows] = r.out.trimEnd().split('\n');
    expect(header).toMatch(/\s+HELD BACK\s+ACKED\s+NOTIFIED$/);
    expect(rows.find((l) => l.includes(delivered))).toMatch(/ops-mail, ops-slack$/);
    expect(rows.find((l) => l.includes(dead))).toMatch(/ops-mail, ops-slack \(dead\)$/);
    expect(rows.find((l) => l.includes(pending))).toMatch(/ops-mail, ops-slack \(pending\)$/);
  });

  it('alerts --format json and /api/alerts carry the same deliveries', async () => {
    const fromCli = (JSON.parse((await cli(['alerts', '--format', 'json'])).out) as { alerts: { id: string; deliveries: unknown[] }[] }).alerts;
    const fromApi = (await api('/api/alerts'))['alerts'] as { id: string; deliveries: unknown[] }[];
    const byId = (list: { id: string; deliveries: unknown[] }[], id: string) => list.find((a) => a.id === id)?.deliveries;
    expect(byId(fromCli, `box-offline/${dead}`)).toEqual([
      { notifier: 'ops-mail', status: 'delivered', at: expect.stringMatching(/Z$/) },
      { notifier: 'ops-slack', status: 'dead', at: expect.stringMatching(/Z$/) },
    ]);
    for (const id of [`box-offline/${delivered}`, `box-offline/${dead}`, `battery-low/${pending}`]) expect(byId(fromApi, id)).toEqual(byId(fromCli, id));
  });
});
