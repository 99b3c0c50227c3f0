import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConsoleNotifier } from '../../src/notify/console.js';
import { Dispatcher, type DeliveryOutcome } from '../../src/notify/dispatcher.js';
import { EmailNotifier } from '../../src/notify/email.js';
import { SlackNotifier } from '../../src/notify/slack.js';
import { formatTime } from '../../src/notify/format.js';
import type { Notifier } from '../../src/domain/notifications.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { SLACK_TEST_PATH, startSlackReceiver, type SlackReceiver } from '../helpers/slack-receiver.js';
import { startSmtpReceiver, type SmtpReceiver } from '../helpers/smtp-receiver.js';
import { T0, item, message } from './fixtures.js';
import { MemoryOutbox } from './memory-outbox.js';
import { dependantSignals } from '../helpers/signal-refs.js';
import { until as waitUntil } from '../helpers/wait.js';

const policy = { baseMs: 10_000, maxMs: 60_000, maxAgeMs: 600_000, random: () => 0.5 };

/** Waits (bounded) for a condition that real I/O will make true. */
const until = (condition: () => boolean, what: string, timeoutMs = 5_000): Promise<unknown> => waitUntil(what, condition, { timeoutMs, everyMs: 5 });

const subjectOf = (body: unknown): string => (body as { text: string }).text;

describe('Dispatcher with real receivers', () => {
  let smtp: SmtpReceiver;
  let slack: SlackReceiver;
  let clock: FakeClock;
  let outbox: MemoryOutbox;
  let consoleOut: PassThrough;
  let notifiers: Notifier[];
  let outcomes: DeliveryOutcome[];
  let dispatcher: Dispatcher;

  const enqueueAll = (msg = message([item()], clock.now())): void => {
    for (const n of notifiers) outbox.enqueue(n.name, msg, clock.now());
  };

  beforeEach(async () => {
    smtp = await startSmtpReceiver();
    slack = await startSlackReceiver();
    clock = new FakeClock(T0);
    outbox = new MemoryOutbox();
    consoleOut = new PassThrough();
    consoleOut.resume();
    notifiers = [
      new EmailNotifier({ name: 'ops-mail', smtpUrl: smtp.url(), from: 'boxwatch@example.com', to: ['ops@example.com'], timeoutMs: 2_000 }),
      new SlackNotifier({ name: 'ops-slack', webhookUrl: slack.url, timeoutMs: 2_000 }),
      new ConsoleNotifier({ name: 'console', stream: consoleOut }),
    ];
    outcomes = [];
    dispatcher = new Dispatcher({ notifiers, queue: outbox, clock, policy, onOutcome: (o) => outcomes.push(o) });
  });

  afterEach(async () => {
    await dispatcher.stop();
    await dispatcher.close();
    await smtp.close();
    await slack.close();
  });

  it('delivers every queued message once to every notifier', async () => {
    enqueueAll();
    await dispatcher.runAllOnce();
    expect(smtp.messages).toHaveLength(1);
    expect(slack.received).toHaveLength(1);
    expect(outbox.rows.every((r) => r.state === 'delivered')).toBe(true);
    await dispatcher.runAllOnce();
    expect(smtp.messages).toHaveLength(1);
    expect(slack.received).toHaveLength(1);
  });

  it('Slack failing never delays e-mail, and Slack catches up in order once it is back', async () => {
    slack.respondWith({ status: 503, body: 'service_unavailable' });
    enqueueAll(message([item()], clock.now()));
    clock.advance(1_000);
    enqueueAll(message([item({ status: 'resolved', resolvedAt: clock.now() })], clock.now()));

    await dispatcher.runAllOnce();
    expect(smtp.messages.map((m) => m.subject)).toEqual([
      '[FIRING] critical: box SN-0042 "Lobby" disconnected',
      '[RESOLVED] critical: box SN-0042 "Lobby" disconnected',
    ]);
    const [first, second] = outbox.of('ops-slack');
    // The first failed and is scheduled (random 0.5 of 10 s); the second waits behind it.
    expect(first).toMatchObject({ state: 'pending', attempts: 1, nextAttemptAt: clock.now() + 5_000 });
    expect(first?.lastError).toBe('notifier "ops-slack": Slack answered HTTP 503: service_unavailable');
    expect(second).toMatchObject({ state: 'pending', attempts: 0 });
    expect(dispatcher.pausedUntilOf('ops-slack')).toBe(clock.now() + 5_000);

    // Still paused: nothing is tried.
    clock.advance(4_000);
    await dispatcher.runOnce('ops-slack');
    expect(slack.requests).toHaveLength(1);

    slack.reset();
    clock.advance(1_000);
    await dispatcher.runOnce('ops-slack');
    expect(slack.received.map((r) => subjectOf(r.body))).toEqual([
      '[FIRING] critical: box SN-0042 "Lobby" disconnected',
      '[RESOLVED] critical: box SN-0042 "Lobby" disconnected',
    ]);
    expect(outbox.rows.every((r) => r.state === 'delivered')).toBe(true);
  });

  it('an SMTP outage of a minute: the e-mail arrives after the server is back', async () => {
    await smtp.stop();
    enqueueAll();
    await dispatcher.runAllOnce();
    expect(slack.received).toHaveLength(1);
    let attempts = 1;
    while (clock.now() < T0 + 60_000) {
      clock.set(outbox.of('ops-mail')[0]?.nextAttemptAt ?? 0);
      await dispatcher.runOnce('ops-mail');
      attempts++;
    }
    expect(outbox.of('ops-mail')[0]).toMatchObject({ state: 'pending', attempts });
    await smtp.start();
    clock.set(outbox.of('ops-mail')[0]?.nextAttemptAt ?? 0);
    await dispatcher.runOnce('ops-mail');
    expect(smtp.messages).toHaveLength(1);
    expect(outbox.of('ops-mail')[0]?.state).toBe('delivered');
    expect(outcomes.filter((o) => o.notifier === 'ops-mail').map((o) => o.result)).toEqual([...Array(attempts).fill('retry'), 'delivered']);
  });

  it('a permanent rejection is dead at once and reported on the other notifiers, without the URL', async () => {
    slack.respondWith({ status: 404, body: 'no_service' });
    outbox.enqueue('ops-slack', message([item()], clock.now()), clock.now());
    await dispatcher.runOnce('ops-slack');
    const [row] = outbox.of('ops-slack');
    expect(row).toMatchObject({ state: 'dead', attempts: 1, lastError: 'notifier "ops-slack": Slack answered HTTP 404: no_service' });
    expect(row?.lastError).not.toContain(SLACK_TEST_PATH);

    // One notice per other notifier, none back to Slack.
    expect(outbox.of('ops-mail')).toHaveLength(1);
    expect(outbox.of('console')).toHaveLength(1);
    expect(outbox.of('ops-slack')).toHaveLength(1);
    await dispatcher.runAllOnce();
    expect(smtp.messages[0]?.subject).toBe('[DELIVERY FAILURE] notifications to "ops-slack" are failing since 2026-01-01 00:00:00 UTC');
    expect(smtp.messages[0]?.text).toContain('1 message given up. Last error: notifier "ops-slack": Slack answered HTTP 404: no_service');
  });

  it('transient failures until maxAge: dead, one notice per interval, and notices never loop', async () => {
    await smtp.stop();
    outbox.enqueue('ops-mail', message([item()], clock.now()), clock.now());
    for (let i = 0; i < 100 && outbox.of('ops-mail')[0]?.state === 'pending'; i++) {
      clock.set(Math.max(clock.now(), outbox.of('ops-mail')[0]?.nextAttemptAt ?? 0));
      await dispatcher.runOnce('ops-mail');
    }
    const [row] = outbox.of('ops-mail');
    expect(row?.state).toBe('dead');
    expect(row?.doneAt).toBeGreaterThanOrEqual(T0 + policy.maxAgeMs);
    expect(outcomes.at(-1)).toMatchObject({ notifier: 'ops-mail', result: 'dead' });
    expect(outbox.of('ops-slack')).toHaveLength(1);

    // A second dead message within the hour: no second notice yet.
    outbox.enqueue('ops-mail', message([item()], clock.now()), clock.now());
    clock.advance(policy.maxAgeMs);
    await dispatcher.runOnce('ops-mail');
    expect(outbox.of('ops-mail')[1]?.state).toBe('dead');
    expect(outbox.of('ops-slack')).toHaveLength(1);
    // After the interval, the pending notice goes out with the count.
    clock.advance(3_600_000);
    await dispatcher.runOnce('ops-mail');
    expect(outbox.of('ops-slack')).toHaveLength(2);
    await dispatcher.runOnce('ops-slack');
    expect(slack.received.map((r) => subjectOf(r.body))).toEqual([
      '[DELIVERY FAILURE] notifications to "ops-mail" are failing since 2026-01-01 00:00:00 UTC',
      `[DELIVERY FAILURE] notifications to "ops-mail" are failing since ${formatTime(outbox.of('ops-mail')[1]?.createdAt ?? 0)}`,
    ]);
  });

  it('the loops deliver on wake(), retry on the clock, and stop cleanly', async () => {
    dispatcher.start();
    enqueueAll();
    dispatcher.wake();
    await smtp.waitFor(1);
    await slack.waitFor(1);

    slack.respondWith({ status: 500, body: 'boom' }, 1);
    enqueueAll(message([item({ status: 'resolved', resolvedAt: clock.now() })], clock.now()));
    dispatcher.wake();
    await smtp.waitFor(2);
    await until(() => outbox.of('ops-slack')[1]?.attempts === 1, 'the failed Slack attempt');
    expect(slack.received).toHaveLength(1);

    clock.advance(5_000);
    const received = await slack.waitFor(2);
    expect(subjectOf(received[1]?.body)).toBe('[RESOLVED] critical: box SN-0042 "Lobby" disconnected');
    await dispatcher.stop();
    expect(outbox.rows.every((r) => r.state === 'delivered')).toBe(true);
  });
});

describe('Dispatcher and the daemon\'s signal', () => {
  it('keeps nothing of its attempts in the signal it is given', async () => {
    const daemon = new AbortController();
    const clock = new FakeClock(T0);
    const outbox = new MemoryOutbox();
    const signals: AbortSignal[] = [];
    const notifier: Notifier = { name: 'n', type: 'console', send: (_m, signal) => {
        if (signal) signals.push(signal);
        return Promise.resolve();
      },
    };
    const dispatcher = new Dispatcher({ notifiers: [notifier], queue: outbox, clock, policy, signal: daemon.signal });
    for (let i = 0; i < 20; i++) {
      outbox.enqueue('n', message([item()], clock.now()), clock.now());
      await dispatcher.runOnce('n');
    }
    expect(signals).toHaveLength(20);
    expect(dependantSignals(daemon.signal)).toBe(0);
    daemon.abort(new Error('stopping'));
    expect(signals.filter((s) => s.aborted)).toHaveLength(0); // an ended attempt no longer follows the daemon's signal
    await dispatcher.close();
  });
});
