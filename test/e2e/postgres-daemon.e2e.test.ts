/**
 * `boxwatch run` on PostgreSQL, end to end with real processes: the built executable with
 * `storage.url: ${BOXWATCH_DATABASE_URL}` on a throwaway PostgreSQL cluster, the simulator over
 * HTTP on the real clock, a local Slack receiver, and the built CLI on the same database:
 *
 * - an alert fires and is delivered once; `status`, `history`, `alerts` read it from PostgreSQL;
 *   `silence add` writes a silence there and the silenced alert is never sent;
 * - /api/boxes, /metrics and the dashboard's fleet page (/api/overview) answer;
 * - a second daemon on the same database is refused while the first runs;
 * - a restart keeps the alert state (no second FIRING), and the resolve is sent once;
 * - the database password appears nowhere: daemon output, CLI output, the API, /healthz, the page;
 * - a malformed storage.url exits 2 naming it; a server that does not answer is one line naming
 *   storage.url and what to check.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { ensureBuilt } from './build.js';
import { runBuilt } from '../helpers/cli-process.js';
import { DaemonProcesses } from '../helpers/daemon-process.js';
import { describeWithPostgres, PostgresServer } from '../helpers/postgres.js';
import { startSlackReceiver, type SlackReceiver } from '../helpers/slack-receiver.js';

const KEY = 'pg-daemon-e2e-key';
const PASSWORD = 'Pg-daemon-Pa55word-e2e';

describeWithPostgres('boxwatch run on PostgreSQL (real processes)', () => {
  let dir: string;
  let pg: PostgresServer;
  let sim: RunningSimulator;
  let slack: SlackReceiver;
  let env: NodeJS.ProcessEnv;
  let daemons: DaemonProcesses;
  let config: string;

  beforeAll(async () => {
    await ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), 'boxwatch-pg-daemon-'));
    pg = await PostgresServer.start();
    // The test server trusts local connections: the password is carried (and must never be shown), not checked.
    const url = (await pg.createDatabase('boxwatch')).replace('postgres@', `postgres:${PASSWORD}@`);
    env = { BOXWATCH_SECRET_KEY: KEY, BOXWATCH_DATABASE_URL: url };
    daemons = new DaemonProcesses(env);
    sim = await startSimulator({ port: 0, key: KEY, devices: 6, seed: 7 }); // real clock, speed 1
    sim.sim.fleet.apply(sim.sim.fleet.boxes, { kind: 'connect' });
    slack = await startSlackReceiver();
    const [a, b] = sim.sim.fleet.boxes;
    config = join(dir, 'boxwatch.yaml');
    writeFileSync(
      config,
      `gateway: { base_url: "${sim.url}", secret_key: "\${BOXWATCH_SECRET_KEY}", timeout: 5s }
poll: { schedule: "* * * * * *" }
storage: { url: "\${BOXWATCH_DATABASE_URL}" }
rules:
  - { name: box-offline, kind: disconnected, severity: critical, boxes: [${a?.serial}, ${b?.serial}] }
alerting: { group_wait: 0s, delivery: { initial_backoff: 500ms, max_backoff: 1s } }
notifiers:
  - { name: ops-slack, type: slack, webhook_url: "${slack.url}" }
http: { listen: "127.0.0.1:0" }
log: { level: info, format: json }
`,
    );
  }, 120_000);

  afterAll(async () => {
    daemons?.killAll();
    await sim?.close();
    await slack?.close();
    pg?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const slacks = (serial: string, status: string): number =>
    slack.received.filter((r) => {
      const text = JSON.stringify(r.body);
      return text.includes(`[${status}]`) && text.includes(serial);
    }).length;
  /** Everything a user could see: kept to check that the password is in none of it. */
  const seen: string[] = [];
  const cli = async (...args: string[]): Promise<{ code: number; out: string; err: string }> => {
    const r = await runBuilt([...args, '--config', config], { env, timeoutMs: 30_000 });
    seen.push(r.out, r.err);
    return r;
  };
  const get = async (url: string): Promise<{ status: number; text: string }> => {
    const res = await fetch(url);
    const text = await res.text();
    seen.push(text);
    return { status: res.status, text };
  };
  /** The HTTP server's address, from the daemon's JSON log line saying where it listens (the last one started). */
  const httpUrl = (): string | undefined => {
    const lines = daemons.output.join('').split('\n').filter((l) => l.includes('http endpoints listening'));
    const last = lines.at(-1);
    return last === undefined ? undefined : (JSON.parse(last) as { url: string }).url;
  };

  it('alerts, delivers once, serves the CLI, the API and the page from PostgreSQL; a second daemon is refused; a restart keeps the alert state', async () => {
    const [a, b] = sim.sim.fleet.boxes as [(typeof sim.sim.fleet.boxes)[number], (typeof sim.sim.fleet.boxes)[number]];
    let daemon = daemons.spawn(config);
    await daemons.until('the first daemon listening', () => httpUrl() !== undefined, 60_000);
    const base = httpUrl() as string;
    // A first cycle sees the whole fleet connected.
    await daemons.until('a first cycle', async () => (JSON.parse((await get(`${base}/api/boxes`)).text) as { boxes: unknown[] }).boxes.length === 6, 60_000);

    sim.sim.fleet.apply([a], { kind: 'disconnect' });
    await daemons.until('A firing on Slack', () => slacks(a.serial, 'FIRING') === 1, 60_000);

    // The CLI reads the daemon's database.
    const status = await cli('status');
    expect(status.code).toBe(0);
    expect(status.out).toContain(a.serial);
    expect(status.out).toMatch(new RegExp(`${a.serial}.*box-offline!`));
    const history = await cli('history', a.serial, '--metric', 'connected', '--since', '1h', '--format', 'json');
    expect(history.code).toBe(0);
    const points = (JSON.parse(history.out) as { points: { value: number }[] }).points;
    expect(points.at(-1)?.value).toBe(0);
    expect(points.some((p) => p.value === 1)).toBe(true);
    const alerts = await cli('alerts', '--active', '--format', 'json');
    expect(alerts.code).toBe(0);
    expect((JSON.parse(alerts.out) as { alerts: { rule: string; box: string; state: string }[] }).alerts).toEqual([expect.objectContaining({ rule: 'box-offline', box: a.serial, state: 'firing' })]);

    // A silence written by the CLI holds B's alert back: it never reaches Slack.
    const silenced = await cli('silence', 'add', '--box', b.serial, '--for', '1h', '--comment', 'maintenance', '--by', 'e2e');
    expect(silenced.code).toBe(0);
    expect(silenced.out).toContain('added silence');
    sim.sim.fleet.apply([b], { kind: 'disconnect' });
    await daemons.until(
      "B's alert firing, held back by the silence",
      async () => {
        const now = JSON.parse((await cli('alerts', '--active', '--format', 'json')).out) as { alerts: { box: string; state: string; heldBack: { reason: string } | null }[] };
        return now.alerts.some((x) => x.box === b.serial && x.state === 'firing' && x.heldBack?.reason === 'silenced');
      },
      60_000,
    );

    // The HTTP API and the dashboard answer from PostgreSQL.
    const boxes = await get(`${base}/api/boxes`);
    expect(boxes.status).toBe(200);
    expect((JSON.parse(boxes.text) as { boxes: { serial: string }[] }).boxes.map((x) => x.serial).sort()).toEqual(sim.sim.fleet.boxes.map((x) => x.serial).sort());
    const metrics = await get(`${base}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.text).toContain(`boxwatch_box_connected{serial="${a.serial}"`);
    expect(metrics.text).toMatch(/boxwatch_alerts_firing\{rule="box-offline",severity="critical"\} 2/);
    const page = await get(`${base}/`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<html');
    const overview = await get(`${base}/api/overview`);
    expect((JSON.parse(overview.text) as { counts: { total: number } }).counts.total).toBe(6);
    const health = await get(`${base}/healthz`);
    expect(health.status).toBe(200);

    // A second daemon on the same database is refused while the first runs.
    const second = daemons.spawn(config);
    expect(await daemons.exited(second, 60_000)).toEqual({ code: 1, signal: null });
    expect(daemons.output.join('')).toMatch(/postgres:\/\/postgres@127\.0\.0\.1:\d+\/boxwatch is in use by another boxwatch daemon \(pid \d+ on /);

    // A restart keeps the alert state: no second FIRING for A; its resolve is sent once.
    daemon.kill('SIGTERM');
    expect(await daemons.exited(daemon)).toEqual({ code: 0, signal: null });
    const before = daemons.output.join('').split('\n').filter((l) => l.includes('http endpoints listening')).length;
    daemon = daemons.spawn(config);
    await daemons.until('the daemon started again', () => daemons.output.join('').split('\n').filter((l) => l.includes('http endpoints listening')).length > before, 60_000);
    sim.sim.fleet.apply([a], { kind: 'connect' });
    await daemons.until('A resolved on Slack', () => slacks(a.serial, 'RESOLVED') === 1, 60_000);
    daemon.kill('SIGTERM');
    expect(await daemons.exited(daemon)).toEqual({ code: 0, signal: null });
    expect([slacks(a.serial, 'FIRING'), slacks(a.serial, 'RESOLVED'), slacks(b.serial, 'FIRING')]).toEqual([1, 1, 0]);
    expect(slack.received).toHaveLength(2);

    // The password is nowhere a user looks.
    seen.push(...daemons.output);
    for (const text of seen) expect(text).not.toContain(PASSWORD);
  }, 300_000);

  it('a malformed storage.url exits 2 naming it; a server that does not answer is one line naming storage.url and what to check', async () => {
    const bad = await runBuilt(['run', '--config', config], { env: { ...env, BOXWATCH_DATABASE_URL: `postgres://boxwatch:${PASSWORD}@db host/boxwatch` } });
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('storage.url: must be a postgres:// or postgresql:// URL');
    expect(bad.out + bad.err).not.toContain(PASSWORD);

    const down = await runBuilt(['run', '--config', config, '--log-format', 'json'], { env: { ...env, BOXWATCH_DATABASE_URL: `postgres://boxwatch:${PASSWORD}@127.0.0.1:1/boxwatch` } });
    expect(down.code).toBe(1);
    expect(down.err.trim().split('\n')).toHaveLength(1);
    expect(down.err).toContain('storage.url: cannot use the PostgreSQL database postgres://boxwatch@127.0.0.1:1/boxwatch');
    expect(down.err).toContain('check that the server runs');
    expect(down.out + down.err).not.toContain(PASSWORD);
  }, 60_000);
});
