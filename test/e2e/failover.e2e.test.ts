/**
 * Failover with real processes: two `boxwatch run` replicas (`cluster:`, 3 s leases) on one
 * database, the simulator (real clock, a cycle every second) and a real Slack receiver. Boxes flap
 * while the replica that leads the account is killed with SIGKILL; the other takes the account over.
 * Every notified transition (FIRING, RESOLVED) stored in the database is delivered exactly once,
 * except a send in flight at the kill, which may arrive twice (at most one extra per channel):
 * counted per item on a webhook receiver (structured alerts), per message on the Slack receiver
 * (each outbox message delivered once).
 * The takeover time (kill to the other replica's lease, and to its first message) is printed.
 * `/healthz` of each replica says which accounts it leads; `/metrics` has boxwatch_lease_held.
 */
import Database from 'better-sqlite3';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { runBuilt } from '../helpers/cli-process.js';
import { DaemonProcesses } from '../helpers/daemon-process.js';
import { startHttpReceiver, type HttpReceiver } from '../helpers/http-receiver.js';
import { startSlackReceiver, type SlackReceiver } from '../helpers/slack-receiver.js';
import { ensureBuilt } from './build.js';

const KEY = 'failover-test-account-key';

let sim: RunningSimulator;
let slack: SlackReceiver;
let hook: HttpReceiver;
let dir: string;
const daemons = new DaemonProcesses({ BOXWATCH_SECRET_KEY: KEY });

beforeAll(async () => {
  await ensureBuilt();
  sim = await startSimulator({ port: 0, key: KEY, devices: 6, seed: 5 }); // real clock, speed 1
  sim.sim.fleet.apply(sim.sim.fleet.boxes, { kind: 'connect' });
  slack = await startSlackReceiver();
  hook = await startHttpReceiver({ path: '/hook' });
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-failover-'));
}, 120_000);

afterAll(async () => {
  daemons.killAll();
  await sim?.close();
  await slack?.close();
  await hook?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

function writeConfig(name: string, dbPath: string, port: number, serials: string[]): string {
  const path = join(dir, `${name}.yaml`);
  writeFileSync(
    path,
    `gateway: { base_url: "${sim.url}", secret_key: "\${BOXWATCH_SECRET_KEY}", timeout: 2s }
poll: { schedule: "* * * * * *" }
storage: { path: "${dbPath}" }
cluster: { lease: 3s, replica_id: ${name} }
rules:
  - { name: box-offline, kind: disconnected, severity: critical, boxes: [${serials.join(', ')}] }
alerting: { group_wait: 0s, delivery: { initial_backoff: 500ms, max_backoff: 1s } }
notifiers:
  - { name: ops-slack, type: slack, webhook_url: "${slack.url}" }
  - { name: ops-hook, type: webhook, url: "${hook.url}" }
http: { listen: "127.0.0.1:${port}" }
log: { level: info, format: json }
`,
  );
  return path;
}

function query<T>(dbPath: string, sql: string): T[] {
  if (!existsSync(dbPath)) return [];
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all() as T[];
  } catch {
    return []; // not created yet
  } finally {
    db.close();
  }
}

const leaderOf = (dbPath: string): { holder: string | null; token: number } | undefined =>
  query<{ holder: string | null; token: number }>(dbPath, "SELECT holder, token FROM leases WHERE account = 'default'")[0];

/** The JSON of `url`, retried while the server is not listening yet. */
async function getJson(url: string): Promise<Record<string, unknown>> {
  for (let i = 0; ; i++) {
    try {
      return (await (await fetch(url)).json()) as Record<string, unknown>;
    } catch (err) {
      if (i > 100) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

describe('failover between two replicas', () => {
  it('the leader is killed while boxes flap: the other takes over, every transition reaches Slack once (a send in flight at most twice)', async () => {
    const boxes = sim.sim.fleet.boxes.slice(0, 4);
    const serials = boxes.map((b) => b.serial);
    const dbPath = join(dir, 'boxwatch.db');
    const ports = { a: await freePort(), b: await freePort() };
    const a = daemons.spawn(writeConfig('replica-a', dbPath, ports.a, serials));
    await daemons.until('replica-a leads the account', () => leaderOf(dbPath)?.holder === 'replica-a', 60_000);
    const b = daemons.spawn(writeConfig('replica-b', dbPath, ports.b, serials));
    await daemons.until('replica-b is up', () => query(dbPath, "SELECT id FROM replicas WHERE id = 'replica-b'").length === 1, 60_000);

    // Each replica says what it leads.
    const healthA = await getJson(`http://127.0.0.1:${ports.a}/healthz`);
    expect(healthA.replica).toEqual({ id: 'replica-a', leads: ['default'] });
    const metricsA = await (await fetch(`http://127.0.0.1:${ports.a}/metrics`)).text();
    expect(metricsA).toMatch(/^boxwatch_lease_held\{account="default"\} 1$/m);

    // Boxes flap: one change every 1.5 s, round robin.
    let flaps = 0;
    let flapping = true;
    const down = new Set<string>();
    const flapper = (async () => {
      while (flapping) {
        const box = boxes[flaps % boxes.length]!;
        const wasDown = down.has(box.serial);
        sim.sim.fleet.apply([box], { kind: wasDown ? 'connect' : 'disconnect' });
        if (wasDown) down.delete(box.serial);
        else down.add(box.serial);
        flaps += 1;
        await new Promise((r) => setTimeout(r, 1_500));
      }
    })();

    await daemons.until('a few transitions delivered', () => slack.received.length >= 4, 60_000);
    const before = leaderOf(dbPath)!;
    expect(before.holder).toBe('replica-a');
    const receivedAtKill = slack.requests.length;
    const killedAt = Date.now();
    a.kill('SIGKILL');
    expect(await daemons.exited(a)).toEqual({ code: null, signal: 'SIGKILL' });

    await daemons.until('replica-b leads the account', () => leaderOf(dbPath)?.holder === 'replica-b', 60_000);
    const leaseTakenAt = Date.now();
    await daemons.until('replica-b delivers', () => slack.requests.length > receivedAtKill + 1, 60_000);
    const firstMessageAt = Date.now();
    expect(leaderOf(dbPath)!.token).toBeGreaterThan(before.token);
    const healthB = await getJson(`http://127.0.0.1:${ports.b}/healthz`);
    expect(healthB.replica).toEqual({ id: 'replica-b', leads: ['default'] });
    // `boxwatch status` says which replica serves the account.
    const status = await runBuilt(['status', '--db', dbPath]);
    expect(status.code).toBe(0);
    expect(status.out).toMatch(/^replicas:\n {2}default: replica-b \(host \S+, pid \d+, heartbeat [^)]+\)$/m);

    // A few more flaps under the new leader, then everything back up and quiet.
    const flapsAtTakeover = flaps;
    await daemons.until('more flaps under replica-b', () => flaps >= flapsAtTakeover + 4, 60_000);
    flapping = false;
    await flapper;
    sim.sim.fleet.apply(boxes, { kind: 'connect' });
    const notified = (): Map<string, number> => {
      const m = new Map<string, number>();
      const rows = query<{ serial: string; to_status: string }>(dbPath, "SELECT serial, to_status FROM alert_transitions WHERE held_back IS NULL AND to_status IN ('firing', 'resolved')");
      for (const t of rows) m.set(`${t.serial} ${t.to_status}`, (m.get(`${t.serial} ${t.to_status}`) ?? 0) + 1);
      return m;
    };
    /** Per box and status, the alerts the webhook receiver got (every request, answered or not). */
    const hooked = (): Map<string, number> => {
      const m = new Map<string, number>();
      for (const r of hook.requests) {
        for (const alert of (r.body as { alerts: { status: string; labels: { serial?: string } }[] }).alerts) {
          const key = `${alert.labels.serial} ${alert.status}`;
          m.set(key, (m.get(key) ?? 0) + 1);
        }
      }
      return m;
    };
    const slackRows = () => query<{ n: number }>(dbPath, "SELECT COUNT(*) AS n FROM outbox WHERE notifier = 'ops-slack' AND status = 'delivered'")[0]?.n ?? 0;
    let last = {};
    await daemons.until('every box resolved, nothing waiting, every transition delivered', () => {
      const firing = query<{ n: number }>(dbPath, "SELECT COUNT(*) AS n FROM alert_states WHERE status = 'firing'")[0]?.n ?? 1;
      const waiting = query<{ n: number }>(dbPath, "SELECT (SELECT COUNT(*) FROM outbox WHERE status IN ('pending', 'sending')) + (SELECT COUNT(*) FROM notification_queue) AS n")[0]?.n ?? 1;
      const got = hooked();
      const missing = [...notified()].filter(([key, n]) => (got.get(key) ?? 0) < n);
      last = { firing, waiting, missing };
      return firing === 0 && waiting === 0 && missing.length === 0;
    }, 60_000).catch((err: unknown) => {
      throw new Error(`${JSON.stringify(last)} ${String(err)}`);
    });
    await new Promise((r) => setTimeout(r, 1_000)); // a late copy would arrive now
    b.kill('SIGTERM');
    expect(await daemons.exited(b)).toEqual({ code: 0, signal: null });

    // Every notified transition was delivered once; a send in flight at the kill at most twice.
    const expected = notified();
    const got = hooked();
    let extra = 0;
    for (const [key, n] of expected) {
      expect(got.get(key) ?? 0, key).toBeGreaterThanOrEqual(n); // none lost
      extra += (got.get(key) ?? 0) - n;
    }
    for (const key of got.keys()) expect(expected.has(key), `${key} was never a transition`).toBe(true);
    expect(extra).toBeLessThanOrEqual(1); // at most the send in flight at the kill
    // Slack: every message recorded as delivered reached it, at most one of them twice.
    expect(slack.requests.length).toBeGreaterThanOrEqual(slackRows());
    expect(slack.requests.length).toBeLessThanOrEqual(slackRows() + 1);
    expect(flaps).toBeGreaterThanOrEqual(8);
    console.log(
      `failover (2 replicas, 3 s lease, 1 s schedule): replica-b took the lease ${leaseTakenAt - killedAt} ms after the kill ` +
        `and its first message reached Slack ${firstMessageAt - killedAt} ms after it; ` +
        `${[...expected.values()].reduce((x, y) => x + y, 0)} transitions notified, ${extra} re-sent; ${slack.requests.length} Slack requests for ${slackRows()} messages`,
    );
  }, 240_000);
});
