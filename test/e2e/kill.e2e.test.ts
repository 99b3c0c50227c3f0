/**
 * End to end with the real process: `node dist/src/main.js run` against the simulator (real
 * clock), a real SMTP server and a real Slack receiver. The daemon is killed with SIGKILL while a
 * Slack delivery is in flight, and restarted: every notification arrives at least once on each
 * channel, and nothing already delivered is sent again.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { startSlackReceiver, type SlackReceiver } from '../helpers/slack-receiver.js';
import { startSmtpReceiver, type SmtpReceiver } from '../helpers/smtp-receiver.js';
import { ensureBuilt } from './build.js';
import { DaemonProcesses } from '../helpers/daemon-process.js';

const KEY = 'kill-test-account-key';

let sim: RunningSimulator;
let smtp: SmtpReceiver;
let slack: SlackReceiver;
let dir: string;
const daemons = new DaemonProcesses({ BOXWATCH_SECRET_KEY: KEY });

beforeAll(async () => {
  await ensureBuilt();
  sim = await startSimulator({ port: 0, key: KEY, devices: 8, seed: 11 }); // real clock, speed 1
  sim.sim.fleet.apply(sim.sim.fleet.boxes, { kind: 'connect' });
  smtp = await startSmtpReceiver();
  slack = await startSlackReceiver();
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-kill-'));
}, 120_000);

afterAll(async () => {
  daemons.killAll();
  await sim?.close();
  await smtp?.close();
  await slack?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function writeConfig(dbPath: string, serials: string[]): string {
  const path = join(dir, 'boxwatch.yaml');
  writeFileSync(
    path,
    `gateway: { base_url: "${sim.url}", secret_key: "\${BOXWATCH_SECRET_KEY}", timeout: 2s }
poll: { schedule: "* * * * * *" }
storage: { path: "${dbPath}" }
rules:
  - { name: box-offline, kind: disconnected, severity: critical, boxes: [${serials.join(', ')}] }
alerting: { group_wait: 0s, delivery: { initial_backoff: 500ms, max_backoff: 1s } }
notifiers:
  - { name: ops-mail, type: email, smtp_url: "${smtp.url()}", from: boxwatch@example.com, to: [ops@example.com] }
  - { name: ops-slack, type: slack, webhook_url: "${slack.url}" }
http: false
log: { level: info, format: json }
`,
  );
  return path;
}




/** How many outbox rows of `notifier` have `status`, read from the daemon's database. */
function outboxCount(dbPath: string, notifier: string, status: string): number {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT COUNT(*) FROM outbox WHERE notifier = ? AND status = ?').pluck().get(notifier, status) as number) ?? 0;
  } finally {
    db.close();
  }
}

const mailsAbout = (serial: string, status: 'FIRING' | 'RESOLVED'): number =>
  smtp.messages.filter((m) => m.subject.startsWith(`[${status}]`) && m.subject.includes(serial)).length;
const slackAbout = (list: readonly { body: unknown }[], serial: string, status: 'FIRING' | 'RESOLVED'): number =>
  list.filter((r) => {
    const text = JSON.stringify(r.body);
    return text.includes(`[${status}]`) && text.includes(serial);
  }).length;

describe('kill -9 during delivery', () => {
  it('loses nothing and sends nothing already delivered again', async () => {
    const [a, b, c] = sim.sim.fleet.boxes as [(typeof sim.sim.fleet.boxes)[number], (typeof sim.sim.fleet.boxes)[number], (typeof sim.sim.fleet.boxes)[number]];
    const dbPath = join(dir, 'boxwatch.db');
    const config = writeConfig(dbPath, [a.serial, b.serial, c.serial]);

    // 1. Box A goes down: delivered on both channels.
    let daemon = daemons.spawn(config);
    sim.sim.fleet.apply([a], { kind: 'disconnect' });
    await daemons.until('A on both channels', () => mailsAbout(a.serial, 'FIRING') === 1 && slackAbout(slack.received, a.serial, 'FIRING') === 1);

    // 2. Slack stops answering; box B goes down. E-mail B is delivered, Slack B is in flight.
    slack.delay(60_000);
    sim.sim.fleet.apply([b], { kind: 'disconnect' });
    await daemons.until('e-mail B', () => mailsAbout(b.serial, 'FIRING') === 1);
    await daemons.until('Slack B in flight', () => slackAbout(slack.requests, b.serial, 'FIRING') === 1);
    await daemons.until('e-mail B recorded as delivered', () => outboxCount(dbPath, 'ops-mail', 'delivered') === 2);
    expect(outboxCount(dbPath, 'ops-slack', 'sending')).toBe(1); // claimed by the pass in flight

    // 3. kill -9 in the middle of the Slack delivery.
    daemon.kill('SIGKILL');
    expect(await daemons.exited(daemon)).toEqual({ code: null, signal: 'SIGKILL' });
    slack.reset(); // Slack answers again (the killed request is never answered)

    // 4. While the daemon is down, box C goes down too. Restart.
    sim.sim.fleet.apply([c], { kind: 'disconnect' });
    daemon = daemons.spawn(config);
    await daemons.until('C on both channels and Slack B delivered', () =>
      mailsAbout(c.serial, 'FIRING') === 1 &&
      slackAbout(slack.received, c.serial, 'FIRING') === 1 &&
      slackAbout(slack.received, b.serial, 'FIRING') === 1,
    );

    // 5. A later event as a barrier: each channel delivers in order, so once A's resolved message
    //    is in, anything resent from before would already be there.
    sim.sim.fleet.apply([a], { kind: 'connect' });
    await daemons.until('A resolved on both channels', () => mailsAbout(a.serial, 'RESOLVED') === 1 && slackAbout(slack.received, a.serial, 'RESOLVED') === 1);
    daemon.kill('SIGTERM');
    expect(await daemons.exited(daemon)).toEqual({ code: 0, signal: null });

    // Every notification arrived at least once on each channel...
    for (const box of [a, b, c]) {
      expect(mailsAbout(box.serial, 'FIRING'), `e-mail ${box.serial}`).toBe(1);
      expect(slackAbout(slack.received, box.serial, 'FIRING'), `Slack ${box.serial}`).toBe(1);
    }
    // ...and what was delivered before the kill was not sent again: e-mail A and B, Slack A.
    expect(smtp.messages).toHaveLength(4);
    expect(slackAbout(slack.requests, a.serial, 'FIRING')).toBe(1);
    // Slack B was in flight (never answered): sent again after the restart, as at-least-once allows.
    expect(slackAbout(slack.requests, b.serial, 'FIRING')).toBe(2);
    expect(slack.received).toHaveLength(4);
    expect(outboxCount(dbPath, 'ops-mail', 'pending') + outboxCount(dbPath, 'ops-slack', 'pending')).toBe(0);
  }, 120_000); // each step waits for its condition; a loaded machine only makes them slower
});
