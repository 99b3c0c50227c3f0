/**
 * Reliability: the process. The real executable (`node dist/src/main.js run`) against the
 * simulator on the real clock, a real SMTP server and a real Slack receiver:
 *
 * - SIGTERM while a cycle hangs on a gateway that never answers: the process ends well within
 *   10 s (the cycle is abandoned after the stop grace period, nothing of it is recorded);
 * - a second daemon on the same database is refused at start, naming the one that holds it; a
 *   daemon killed on another host (a container) is taken over once its heartbeat is too old, and
 *   a daemon whose hold was taken over stops;
 * - kill -9 while a cycle is in flight: after the restart the database opens, every committed
 *   cycle is there, and every notification arrives exactly once per channel.
 *
 * (kill -9 in the middle of a Slack delivery is test/e2e/kill.e2e.test.ts.)
 */
import Database from 'better-sqlite3';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Endpoint } from '../../src/gateway/types.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { DAEMON_STALE_AFTER_MS, type DaemonHolder } from '../../src/store/index.js';
import { ensureBuilt } from '../e2e/build.js';
import { DaemonProcesses } from '../helpers/daemon-process.js';
import { startSlackReceiver, type SlackReceiver } from '../helpers/slack-receiver.js';
import { startSmtpReceiver, type SmtpReceiver } from '../helpers/smtp-receiver.js';

const KEY = 'process-reliability-key';
let dir: string;
const daemons = new DaemonProcesses({ BOXWATCH_SECRET_KEY: KEY });
const output = daemons.output;

beforeAll(async () => {
  await ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-rel-proc-'));
}, 120_000);

afterAll(() => {
  daemons.killAll();
  if (dir) rmSync(dir, { recursive: true, force: true });
});




/** Reads the daemon's database with a connection of our own. */
function query<T>(dbPath: string, sql: string): T[] {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all() as T[];
  } finally {
    db.close();
  }
}

function writeConfig(name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, body);
  return path;
}

describe('SIGTERM', () => {
  let server: Server;
  let requests = 0;
  beforeAll(async () => {
    // A gateway that accepts requests and never answers.
    server = createServer(() => {
      requests += 1;
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('stops `boxwatch run` within 10 s while a cycle hangs on a gateway that never answers', async () => {
    const port = (server.address() as AddressInfo).port;
    const dbPath = join(dir, 'sigterm.db');
    const config = writeConfig(
      'sigterm.yaml',
      `gateway: { base_url: "http://127.0.0.1:${port}", secret_key: "\${BOXWATCH_SECRET_KEY}" }
poll: { schedule: "* * * * * *" }
storage: { path: "${dbPath}" }
notifiers: [{ name: console, type: console }]
http: false
log: { level: info, format: json }
`,
    );
    output.length = 0;
    const daemon = daemons.spawn(config);
    await daemons.until('a request to the gateway', () => requests > 0);
    const sent = Date.now();
    daemon.kill('SIGTERM');
    expect(await daemons.exited(daemon, 10_000)).toEqual({ code: 0, signal: null });
    expect(Date.now() - sent).toBeLessThan(10_000);
    const log = output.join('');
    expect(log).toContain('abandoning the requests still in flight');
    expect(log).toContain('poll cycle abandoned at shutdown');
    expect(log).toContain('boxwatch stopped');
    // Nothing of the abandoned cycle was recorded, and the database was closed cleanly.
    expect(query(dbPath, 'SELECT * FROM cycles')).toEqual([]);
    expect(query<{ integrity_check: string }>(dbPath, 'PRAGMA integrity_check')).toEqual([{ integrity_check: 'ok' }]);
  }, 60_000);
});

describe('a second daemon on the same database', () => {
  /** A daemon on `name`.db that polls every second a gateway nobody answers at; returns the database and the configuration file. */
  function idleDaemon(name: string): { dbPath: string; config: string } {
    const dbPath = join(dir, `${name}.db`);
    const config = writeConfig(
      `${name}.yaml`,
      `gateway: { base_url: "http://127.0.0.1:9", secret_key: "\${BOXWATCH_SECRET_KEY}", timeout: 1s }
poll: { schedule: "* * * * * *" }
storage: { path: "${dbPath}" }
notifiers: [{ name: console, type: console }]
http: false
log: { level: info, format: json }
`,
    );
    return { dbPath, config };
  }

  it('is refused at start, naming the holder (pid, host, since) and the database; the first keeps running', async () => {
    const { dbPath, config } = idleDaemon('second');
    output.length = 0;
    const first = daemons.spawn(config);
    await daemons.until('the first daemon to poll', () => output.join('').includes('boxwatch polling'));
    const second = daemons.spawn(config);
    expect(await daemons.exited(second)).toEqual({ code: 1, signal: null });
    const refusal = output.join('').split('\n').find((l) => l.includes('store_in_use'));
    expect(refusal).toContain(`${dbPath} is in use by another boxwatch daemon (pid ${first.pid} on ${hostname()}, since 20`);
    expect(first.exitCode).toBeNull(); // still running
    first.kill('SIGTERM');
    expect(await daemons.exited(first)).toEqual({ code: 0, signal: null });
    // Stopped cleanly: the database is free for the next one.
    output.length = 0;
    const third = daemons.spawn(config);
    await daemons.until('the next daemon to poll', () => output.join('').includes('boxwatch polling'));
    third.kill('SIGTERM');
    expect(await daemons.exited(third)).toEqual({ code: 0, signal: null });
  }, 60_000);

  it('a daemon killed on another host is taken over once its heartbeat is older than the bound; one taken over stops', async () => {
    const { dbPath, config } = idleDaemon('heartbeat');
    const holder = (): DaemonHolder => JSON.parse(query<{ value: string }>(dbPath, "SELECT value FROM meta WHERE key = 'daemon'")[0]!.value) as DaemonHolder;
    const plant = (h: DaemonHolder): void => {
      const db = new Database(dbPath);
      try {
        db.prepare("UPDATE meta SET value = ? WHERE key = 'daemon'").run(JSON.stringify(h));
      } finally {
        db.close();
      }
    };
    output.length = 0;
    const first = daemons.spawn(config);
    await daemons.until('the first daemon to poll', () => output.join('').includes('boxwatch polling'));
    const started = holder();
    expect(started).toMatchObject({ pid: first.pid, host: hostname() });
    await daemons.until('a heartbeat', () => (holder().beat as number) > (started.beat as number)); // the running daemon beats

    // It was killed in a container on another host: its pid cannot be checked from here.
    first.kill('SIGKILL');
    await daemons.exited(first);
    const killed = { ...holder(), host: 'container-a' };
    plant(killed);
    const refused = daemons.spawn(config);
    expect(await daemons.exited(refused)).toEqual({ code: 1, signal: null });
    expect(output.join('')).toMatch(new RegExp(`in use by another boxwatch daemon \\(pid ${first.pid} on container-a, since [^,]+, last heartbeat \\d+s ago\\)`));

    // No heartbeat for longer than the bound (instead of waiting for it): taken over.
    plant({ ...killed, beat: Date.now() - DAEMON_STALE_AFTER_MS - 10_000 });
    output.length = 0;
    const next = daemons.spawn(config);
    await daemons.until('the next daemon to poll', () => output.join('').includes('boxwatch polling'));
    expect(output.join('')).toContain(`took the database over from a daemon that is gone (pid ${first.pid} on container-a)`);
    expect(holder()).toMatchObject({ pid: next.pid, host: hostname() });

    // Its own heartbeat stalls too long and another daemon takes the database: at its next heartbeat it stops.
    const other = { pid: 4242, host: 'container-b', since: Date.now(), beat: Date.now() };
    plant(other);
    expect(await daemons.exited(next, 30_000)).toEqual({ code: 1, signal: null });
    expect(output.join('')).toContain(`was taken over by another boxwatch daemon (now held by pid 4242 on container-b`);
    expect(holder()).toEqual(other); // left as the other daemon wrote it
  }, 90_000);
});

describe('kill -9 mid-cycle', () => {
  let sim: RunningSimulator;
  let smtp: SmtpReceiver;
  let slack: SlackReceiver;
  let listRequests = 0;
  beforeAll(async () => {
    sim = await startSimulator({ port: 0, key: KEY, devices: 6, seed: 21 }); // real clock, speed 1
    sim.sim.fleet.apply(sim.sim.fleet.boxes, { kind: 'connect' });
    // Count device-list requests as the simulator sees them.
    const decide = sim.sim.faultFor.bind(sim.sim);
    sim.sim.faultFor = (endpoint: Endpoint, now: number) => {
      if (endpoint === 'device_list') listRequests += 1;
      return decide(endpoint, now);
    };
    smtp = await startSmtpReceiver();
    slack = await startSlackReceiver();
  });
  afterAll(async () => {
    await sim?.close();
    await smtp?.close();
    await slack?.close();
  });

  const mails = (serial: string, status: string): number => smtp.messages.filter((m) => m.subject.startsWith(`[${status}]`) && m.subject.includes(serial)).length;
  const slacks = (serial: string, status: string): number =>
    slack.received.filter((r) => {
      const text = JSON.stringify(r.body);
      return text.includes(`[${status}]`) && text.includes(serial);
    }).length;

  it('restarts on an intact database: committed cycles kept, nothing lost, nothing sent twice', async () => {
    const [a, b] = sim.sim.fleet.boxes as [(typeof sim.sim.fleet.boxes)[number], (typeof sim.sim.fleet.boxes)[number]];
    const dbPath = join(dir, 'kill.db');
    const config = writeConfig(
      'kill.yaml',
      `gateway: { base_url: "${sim.url}", secret_key: "\${BOXWATCH_SECRET_KEY}", timeout: 5s }
poll: { schedule: "* * * * * *" }
storage: { path: "${dbPath}" }
rules:
  - { name: box-offline, kind: disconnected, severity: critical, boxes: [${a.serial}, ${b.serial}] }
alerting: { group_wait: 0s, delivery: { initial_backoff: 500ms, max_backoff: 1s } }
notifiers:
  - { name: ops-mail, type: email, smtp_url: "${smtp.url()}", from: boxwatch@example.com, to: [ops@example.com] }
  - { name: ops-slack, type: slack, webhook_url: "${slack.url}" }
http: false
log: { level: info, format: json }
`,
    );
    output.length = 0;
    let daemon = daemons.spawn(config);
    sim.sim.fleet.apply([a], { kind: 'disconnect' });
    await daemons.until('A on both channels', () => mails(a.serial, 'FIRING') === 1 && slacks(a.serial, 'FIRING') === 1);

    // The gateway becomes slow; while a cycle waits for the device list box B goes down (that
    // cycle would see it) and the daemon is killed.
    const removeLatency = sim.sim.inject({ latencyMs: 3_000, endpoints: ['device_list'] });
    const before = listRequests;
    await daemons.until('a cycle in flight', () => listRequests > before);
    sim.sim.fleet.apply([b], { kind: 'disconnect' });
    daemon.kill('SIGKILL');
    expect(await daemons.exited(daemon, 5_000)).toEqual({ code: null, signal: 'SIGKILL' });
    const committed = query<{ started_at: number; outcome: string }>(dbPath, 'SELECT started_at, outcome FROM cycles ORDER BY started_at');
    expect(committed.length).toBeGreaterThan(0);
    expect(mails(b.serial, 'FIRING') + slacks(b.serial, 'FIRING')).toBe(0); // B was never committed

    // Restart with the gateway fast again: B is raised once on each channel.
    removeLatency();
    daemon = daemons.spawn(config);
    await daemons.until('B on both channels', () => mails(b.serial, 'FIRING') === 1 && slacks(b.serial, 'FIRING') === 1);
    // A later event as a barrier: once A's resolved message is in, anything resent would be too.
    sim.sim.fleet.apply([a], { kind: 'connect' });
    await daemons.until('A resolved on both channels', () => mails(a.serial, 'RESOLVED') === 1 && slacks(a.serial, 'RESOLVED') === 1);
    daemon.kill('SIGTERM');
    expect(await daemons.exited(daemon)).toEqual({ code: 0, signal: null });

    // The database is intact; every cycle committed before the kill is still there, in order.
    expect(query<{ integrity_check: string }>(dbPath, 'PRAGMA integrity_check')).toEqual([{ integrity_check: 'ok' }]);
    const after = query<{ started_at: number; outcome: string }>(dbPath, 'SELECT started_at, outcome FROM cycles ORDER BY started_at');
    expect(after.slice(0, committed.length)).toEqual(committed);
    expect(after.length).toBeGreaterThan(committed.length);
    // Box A's history has no hole up to the last committed cycle.
    const last = committed.at(-1)!.started_at;
    expect(query<{ serial: string }>(dbPath, `SELECT serial FROM v_boxes WHERE last_polled >= ${last}`).length).toBe(sim.sim.fleet.boxes.length);
    // Exactly once per channel: A firing, B firing, A resolved; nothing else.
    expect([mails(a.serial, 'FIRING'), mails(b.serial, 'FIRING'), mails(a.serial, 'RESOLVED')]).toEqual([1, 1, 1]);
    expect([slacks(a.serial, 'FIRING'), slacks(b.serial, 'FIRING'), slacks(a.serial, 'RESOLVED')]).toEqual([1, 1, 1]);
    expect(smtp.messages).toHaveLength(3);
    expect(slack.received).toHaveLength(3);
    expect(query<{ n: number }>(dbPath, "SELECT COUNT(*) AS n FROM outbox WHERE status != 'delivered'")).toEqual([{ n: 0 }]);
  }, 120_000);
});
