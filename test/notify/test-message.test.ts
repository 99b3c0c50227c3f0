import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNotifier } from '../../src/notify/index.js';
import { sendTestMessages } from '../../src/notify/test-message.js';
import type { Notifier } from '../../src/domain/notifications.js';
import { SLACK_TEST_PATH, startSlackReceiver, type SlackReceiver } from '../helpers/slack-receiver.js';
import { startSmtpReceiver, type SmtpReceiver } from '../helpers/smtp-receiver.js';
import { T0 } from './fixtures.js';

describe('sendTestMessages', () => {
  let smtp: SmtpReceiver;
  let slack: SlackReceiver;
  let notifiers: Notifier[];

  beforeAll(async () => {
    smtp = await startSmtpReceiver();
    slack = await startSlackReceiver();
    const out = new PassThrough();
    out.resume();
    notifiers = [
      createNotifier({ name: 'ops-mail', type: 'email', smtp_url: smtp.url(), from: 'boxwatch@example.com', to: ['ops@example.com'] }),
      createNotifier({ name: 'ops-slack', type: 'slack', webhook_url: slack.url }),
      createNotifier({ name: 'console', type: 'console' }, { stdout: out }),
    ];
  });
  afterAll(async () => {
    await Promise.all(notifiers.map((n) => n.close?.()));
    await smtp.close();
    await slack.close();
  });

  it('reports success per notifier, and the exact failure without secrets', async () => {
    slack.respondWith({ status: 404, body: 'no_service' }, 1);
    const results = await sendTestMessages(notifiers, { now: T0, source: 'host-1' });
    expect(results).toEqual([
      { notifier: 'ops-mail', type: 'email', ok: true },
      { notifier: 'ops-slack', type: 'slack', ok: false, error: 'notifier "ops-slack": Slack answered HTTP 404: no_service', retryable: false },
      { notifier: 'console', type: 'console', ok: true },
    ]);
    expect(JSON.stringify(results)).not.toContain(SLACK_TEST_PATH);
    const [mail] = await smtp.waitFor(1);
    expect(mail?.subject).toBe('[TEST] boxwatch test notification');
    expect(mail?.text).toContain('from host-1');
  });

  it('only the named notifier, and nothing for an unknown name', async () => {
    const before = slack.received.length;
    expect(await sendTestMessages(notifiers, { now: T0, only: 'ops-slack' })).toEqual([{ notifier: 'ops-slack', type: 'slack', ok: true }]);
    expect(slack.received).toHaveLength(before + 1);
    expect(await sendTestMessages(notifiers, { now: T0, only: 'nope' })).toEqual([]);
  });
});
