/**
 * `boxwatch notify-test` against a real SMTP server (with a login) and a real Slack webhook
 * receiver: one line per notifier, `ok` or the exact failure, exit 1 on any failure, exit 2 for an
 * unknown notifier; neither the SMTP password nor the webhook URL ever appears in the output.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SLACK_TEST_PATH, startSlackReceiver, type SlackReceiver } from '../helpers/slack-receiver.js';
import { startSmtpReceiver, type SmtpReceiver } from '../helpers/smtp-receiver.js';
import { run, type Run } from './run.js';

const KEY = 'notify-test-account-key-77';
const SMTP_USER = 'mailer';
const SMTP_PASS = 'sm7p-pa55word-xyz';

let smtp: SmtpReceiver;
let slack: SlackReceiver;
let dir: string;
let configPath: string;

beforeAll(async () => {
  smtp = await startSmtpReceiver({ auth: { user: SMTP_USER, pass: SMTP_PASS } });
  slack = await startSlackReceiver();
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-notify-test-'));
  configPath = join(dir, 'boxwatch.yaml');
  writeFileSync(
    configPath,
    `gateway: { secret_key: "\${KEY}" }
notifiers:
  - { name: ops-mail, type: email, smtp_url: "\${SMTP_URL}", from: boxwatch@example.com, to: [ops@example.com] }
  - { name: ops-slack, type: slack, webhook_url: "\${SLACK_WEBHOOK_URL}" }
  - { name: console, type: console }
`,
  );
});
afterAll(async () => {
  await smtp.close();
  await slack.close();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(() => {
  smtp.accept();
  slack.reset();
  smtp.messages.length = 0;
  slack.received.length = 0;
  slack.requests.length = 0;
});

async function notifyTest(args: string[], smtpUrl = smtp.url()): Promise<Run> {
  const r = await run(['notify-test', ...args, '--config', configPath], { KEY, SMTP_URL: smtpUrl, SLACK_WEBHOOK_URL: slack.url });
  const all = r.out + r.err;
  for (const secret of [KEY, SMTP_PASS, encodeURIComponent(SMTP_PASS), SLACK_TEST_PATH, 's3cr3tW3bh00kT0k3n', slack.url]) expect(all).not.toContain(secret);
  return r;
}

const rowOf = (out: string, name: string): string => out.split('\n').find((l) => l.startsWith(`${name} `)) ?? '';

describe('boxwatch notify-test', () => {
  it('sends one test message through every notifier and prints ok for each', async () => {
    const r = await notifyTest([]);
    expect(r).toMatchObject({ code: 0, err: '' });
    expect(r.out).toMatch(/ TEST /); // the console notifier's own line
    expect(r.out).toMatch(/NOTIFIER\s+TYPE\s+RESULT\n/);
    expect(rowOf(r.out, 'ops-mail')).toMatch(/^ops-mail\s+email\s+ok$/);
    expect(rowOf(r.out, 'ops-slack')).toMatch(/^ops-slack\s+slack\s+ok$/);
    expect(rowOf(r.out, 'console')).toMatch(/^console\s+console\s+ok$/);
    expect(smtp.messages).toHaveLength(1);
    expect(smtp.messages[0]!.user).toBe(SMTP_USER);
    expect(slack.received).toHaveLength(1);
  });

  it('--notifier sends through that one only', async () => {
    const r = await notifyTest(['--notifier', 'ops-slack']);
    expect(r.code).toBe(0);
    expect(r.out.trimEnd().split('\n')).toEqual([expect.stringMatching(/^NOTIFIER/), expect.stringMatching(/^ops-slack\s+slack\s+ok$/)]);
    expect(slack.received).toHaveLength(1);
    expect(smtp.messages).toHaveLength(0);
  });

  it('prints the exact failure of each notifier, without secrets, and exits 1', async () => {
    slack.respondWith({ status: 404, body: 'no_service' });
    const r = await notifyTest([], smtp.url({ user: SMTP_USER, pass: 'wrong-pa55word' }));
    expect(r.code).toBe(1);
    expect(rowOf(r.out, 'ops-mail')).toMatch(/^ops-mail\s+email\s+FAILED: notifier "ops-mail": .*(auth|535)/i);
    expect(rowOf(r.out, 'ops-slack')).toMatch(/^ops-slack\s+slack\s+FAILED: notifier "ops-slack": .*404/);
    expect(rowOf(r.out, 'console')).toMatch(/ok$/);
    expect(r.err).toBe('error [notify_test_failed]: 2 of 3 notifier(s) failed\n');
    expect(r.out).not.toContain('wrong-pa55word');
  });

  it('says a failure is temporary when the server is down', async () => {
    await smtp.stop();
    try {
      const r = await notifyTest(['--notifier', 'ops-mail']);
      expect(r.code).toBe(1);
      expect(rowOf(r.out, 'ops-mail')).toMatch(/FAILED: .*\(temporary: try again later\)$/);
    } finally {
      await smtp.start();
    }
  });

  it('an unknown --notifier exits 2 and lists the configured names, sending nothing', async () => {
    const r = await notifyTest(['--notifier', 'pager']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('error: no notifier named "pager" (configured: ops-mail, ops-slack, console)');
    expect(smtp.messages).toHaveLength(0);
    expect(slack.requests).toHaveLength(0);
  });

  it('an invalid configuration exits 2 without echoing secrets', async () => {
    const r = await notifyTest([], 'http://not-smtp.example');
    expect(r.code).toBe(2);
    expect(r.err).toContain('notifiers[0].smtp_url');
  });
});
