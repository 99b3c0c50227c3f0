/**
 * Reliability: notification channels that are down, slow or answer errors. The other channels are
 * not delayed; a transient failure is retried with backoff (never before the next attempt is due,
 * never before a Retry-After) until the channel is back, and then delivered once; a permanent
 * failure, or a message still undelivered after `max_age`, is given up (dead) and reported on the
 * other channels.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startRig, type Rig } from './rig.js';
import { connectionOf } from '../helpers/sqlite.js';

const YAML = `rules:
  - { name: box-offline, kind: disconnected, severity: critical }
alerting: { group_wait: 0s, delivery: { initial_backoff: 10s, max_backoff: 5m, max_age: 15m } }`;

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

interface OutboxRow {
  status: string;
  attempts: number;
  next_attempt_at: number;
  last_error: string | null;
}
const outbox = (r: Rig, notifier: string): OutboxRow[] =>
  connectionOf(r.app.store).prepare('SELECT status, attempts, next_attempt_at, last_error FROM outbox WHERE notifier = ? ORDER BY id').all(notifier) as OutboxRow[];

/** A rig whose fleet is polled once, then one box goes down while `fail` is in effect. */
async function boxDownWhile(fail: (r: Rig) => void | Promise<void>, options: { slackTimeoutMs?: number } = {}): Promise<{ r: Rig; serial: string }> {
  const r = await startRig({ yaml: YAML, ...options });
  rig = r;
  await r.cycle(0);
  await fail(r);
  const box = r.sim.sim.fleet.boxes[3]!;
  r.sim.sim.fleet.apply([box], { kind: 'disconnect' });
  await r.cycle();
  return { r, serial: box.serial };
}

const mails = (r: Rig, serial: string): number => r.smtp.messages.filter((m) => m.subject.startsWith('[FIRING]') && m.subject.includes(serial)).length;
const slacks = (r: Rig, serial: string): number => r.slack.received.filter((w) => JSON.stringify(w.body).includes(serial)).length;
const consoles = (r: Rig, serial: string): number => r.console.filter((l) => l.includes(serial)).length;

type Channel = 'ops-mail' | 'ops-slack';
const TRANSIENT: [string, Channel, (r: Rig) => void | Promise<void>, (r: Rig) => void | Promise<void>][] = [
  ['the SMTP server is down', 'ops-mail', (r) => r.smtp.stop(), (r) => r.smtp.start()],
  ['the SMTP server answers 451 (try later)', 'ops-mail', (r) => r.smtp.rejectWith(451), (r) => r.smtp.accept()],
  ['the Slack webhook is down', 'ops-slack', (r) => r.slack.stop(), (r) => r.slack.start()],
  ['Slack answers 500', 'ops-slack', (r) => r.slack.respondWith({ status: 500, body: 'internal_error' }), (r) => r.slack.reset()],
  ['Slack answers 503', 'ops-slack', (r) => r.slack.respondWith({ status: 503, body: 'service_unavailable' }), (r) => r.slack.reset()],
];

describe('a channel fails for ten minutes, then comes back', () => {
  it.each(TRANSIENT)('%s: the others deliver at once; retried with backoff; delivered once when back', async (_name, channel, fail, heal) => {
    const { r, serial } = await boxDownWhile(fail);
    const other = channel === 'ops-mail' ? slacks : mails;
    const failing = channel === 'ops-mail' ? mails : slacks;
    // The first pass: the healthy channels have it, the failing one is waiting for a retry.
    expect(other(r, serial)).toBe(1);
    expect(consoles(r, serial)).toBe(1);
    expect(failing(r, serial)).toBe(0);
    expect(outbox(r, channel)).toEqual([expect.objectContaining({ status: 'pending', attempts: 1 })]);
    expect(outbox(r, channel)[0]!.next_attempt_at).toBeLessThanOrEqual(r.clock.now() + 10_000);

    // Ten minutes of passes every 10 s: attempts grow with backoff, not with every pass.
    for (let i = 0; i < 60; i++) {
      r.clock.advance(10_000);
      await r.app.deliverNow();
    }
    const [row] = outbox(r, channel);
    expect(row).toMatchObject({ status: 'pending' });
    expect(row!.attempts).toBeGreaterThan(2);
    expect(row!.attempts).toBeLessThan(30);
    expect(row!.last_error).toBeTruthy();

    await heal(r);
    r.clock.advance(5 * 60_000); // past the longest backoff
    await r.app.deliverNow();
    expect(failing(r, serial)).toBe(1);
    expect(outbox(r, channel)).toEqual([expect.objectContaining({ status: 'delivered' })]);
    // Exactly once everywhere, and no delivery-failure notice: nothing was given up.
    r.clock.advance(60_000);
    await r.app.deliverNow();
    expect([mails(r, serial), slacks(r, serial), consoles(r, serial)]).toEqual([1, 1, 1]);
    expect(r.smtp.messages.map((m) => m.subject).join('\n')).not.toContain('DELIVERY FAILURE');
    expect(r.console.join('\n')).not.toContain('DELIVERY FAILURE');
  });

  it('Slack answers 429 with Retry-After: no new attempt before it', async () => {
    const { r, serial } = await boxDownWhile((r) => r.slack.respondWith({ status: 429, body: 'rate_limited', headers: { 'Retry-After': '120' } }, 1));
    const failedAt = r.clock.now();
    expect(outbox(r, 'ops-slack')[0]).toMatchObject({ status: 'pending', attempts: 1 });
    expect(outbox(r, 'ops-slack')[0]!.next_attempt_at).toBeGreaterThanOrEqual(failedAt + 120_000);
    for (let t = 0; t < 110_000; t += 10_000) {
      r.clock.advance(10_000);
      await r.app.deliverNow();
    }
    expect(r.slack.requests).toHaveLength(1);
    r.clock.advance(15_000);
    await r.app.deliverNow();
    expect(r.slack.requests).toHaveLength(2);
    expect(slacks(r, serial)).toBe(1);
  });
});

describe('a slow channel', () => {
  it('Slack answering after its timeout: e-mail and console are not held up; Slack is retried and delivered', async () => {
    const { r, serial } = await boxDownWhile((r) => r.slack.delay(1_500), { slackTimeoutMs: 300 });
    expect(mails(r, serial)).toBe(1);
    expect(consoles(r, serial)).toBe(1);
    expect(outbox(r, 'ops-slack')).toEqual([expect.objectContaining({ status: 'pending', attempts: 1, last_error: expect.stringMatching(/timed out/) })]);
    r.slack.reset();
    r.clock.advance(5 * 60_000);
    await r.app.deliverNow();
    expect(outbox(r, 'ops-slack')).toEqual([expect.objectContaining({ status: 'delivered' })]);
    // The request that timed out may still have reached Slack: at least once, as documented.
    expect(slacks(r, serial)).toBeGreaterThanOrEqual(1);
  });

  it('Slack answering slowly within its timeout: the e-mail goes out while Slack is still busy', async () => {
    const r = await startRig({ yaml: YAML });
    rig = r;
    await r.cycle(0);
    r.slack.delay(2_500);
    const box = r.sim.sim.fleet.boxes[3]!;
    r.sim.sim.fleet.apply([box], { kind: 'disconnect' });
    r.clock.advance(30_000);
    await r.app.runOnce();
    const pass = r.app.deliverNow();
    await r.smtp.waitFor(1, 5_000);
    expect(r.slack.received).toHaveLength(0); // Slack has not answered yet
    await pass;
    expect(slacks(r, box.serial)).toBe(1);
  });
});

describe('given up: reported on the other channels', () => {
  it('Slack rejects the webhook (404 no_service): dead at once, reported by e-mail and on the console', async () => {
    const { r } = await boxDownWhile((r) => r.slack.respondWith({ status: 404, body: 'no_service' }));
    expect(outbox(r, 'ops-slack')).toEqual([expect.objectContaining({ status: 'dead', attempts: 1, last_error: expect.stringContaining('Slack answered HTTP 404: no_service') })]);
    await r.app.deliverNow();
    const notice = r.smtp.messages.find((m) => m.subject.startsWith('[DELIVERY FAILURE]'));
    expect(notice?.subject).toMatch(/^\[DELIVERY FAILURE\] notifications to "ops-slack" are failing since /);
    expect(r.console.some((l) => l.includes('DELIVERY FAILURE') && l.includes('ops-slack'))).toBe(true);
    // The notice is not sent to the failing channel itself.
    expect(outbox(r, 'ops-slack')).toHaveLength(1);
  });

  it('the notice is an outbox row: a restart before it could be sent neither loses nor repeats it', async () => {
    const { r } = await boxDownWhile(async (r) => {
      r.slack.respondWith({ status: 404, body: 'no_service' });
      await r.smtp.stop();
    });
    await r.app.deliverNow();
    expect(outbox(r, 'ops-slack')).toEqual([expect.objectContaining({ status: 'dead' })]);
    const notices = (): number => r.smtp.messages.filter((m) => m.subject.startsWith('[DELIVERY FAILURE]')).length;
    expect(notices()).toBe(0); // the mail server is down: the notice waits in the outbox
    expect(outbox(r, 'ops-mail')).toHaveLength(2); // the alert and the notice
    await r.restart({ whileDown: () => r.smtp.start() });
    for (let i = 0; i < 4; i++) await r.cycle(5 * 60_000); // past any backoff
    expect(notices()).toBe(1);
    expect(r.smtp.messages.find((m) => m.subject.startsWith('[DELIVERY FAILURE]'))?.subject).toMatch(/notifications to "ops-slack" are failing since /);
    r.slack.reset(); // Slack works again: nothing new fails
    await r.restart();
    for (let i = 0; i < 3; i++) await r.cycle(2 * 3_600_000); // past the notice interval: the old failure is not told again
    expect(notices()).toBe(1);
  });

  it('the SMTP server refuses the message (550): dead at once, reported on Slack', async () => {
    const { r } = await boxDownWhile((r) => r.smtp.rejectWith(550, 'Mailbox unavailable'));
    expect(outbox(r, 'ops-mail')).toEqual([expect.objectContaining({ status: 'dead', attempts: 1 })]);
    await r.app.deliverNow();
    expect(r.slack.received.some((w) => JSON.stringify(w.body).includes('DELIVERY FAILURE'))).toBe(true);
  });

  it('the SMTP server down for longer than max_age: dead, reported on Slack and the console, not sent when it is back', async () => {
    const { r, serial } = await boxDownWhile((r) => r.smtp.stop());
    // Death comes with the first failed attempt after max_age (15 m): within one max_backoff (5 m).
    for (let t = 0; t < 21 * 60_000; t += 30_000) {
      r.clock.advance(30_000);
      await r.app.deliverNow();
    }
    expect(outbox(r, 'ops-mail')).toEqual([expect.objectContaining({ status: 'dead' })]);
    expect(outbox(r, 'ops-mail')[0]!.attempts).toBeGreaterThan(1);
    await r.app.deliverNow();
    expect(r.slack.received.filter((w) => JSON.stringify(w.body).includes('DELIVERY FAILURE'))).toHaveLength(1);
    expect(r.console.filter((l) => l.includes('DELIVERY FAILURE'))).not.toHaveLength(0);

    await r.smtp.start();
    r.clock.advance(10 * 60_000);
    await r.app.deliverNow();
    expect(mails(r, serial)).toBe(0);
  });
});
