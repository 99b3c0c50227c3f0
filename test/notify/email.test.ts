import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EmailNotifier, buildEmail } from '../../src/notify/email.js';
import { NotifyError } from '../../src/notify/errors.js';
import { startSmtpReceiver, type SmtpReceiver } from '../helpers/smtp-receiver.js';
import { HOSTILE, T0, batteryItem, item, message, powerCut } from './fixtures.js';
import { collectChain } from './secrets.js';

describe('buildEmail', () => {
  it('names the box, its name, severity and status in the subject', () => {
    expect(buildEmail(message([item()]), 'ops-mail').subject).toBe('[FIRING] critical: box SN-0042 "Lobby" disconnected');
    expect(buildEmail(message([item({ status: 'resolved', resolvedAt: T0 + 600_000 })]), 'ops-mail').subject).toBe(
      '[RESOLVED] critical: box SN-0042 "Lobby" disconnected',
    );
    expect(buildEmail(message([item({ status: 'repeat' })]), 'ops-mail').subject).toBe(
      '[FIRING] critical: box SN-0042 "Lobby" disconnected (still firing)',
    );
  });

  it('gateway-level alerts have no box', () => {
    const gw = item({ serial: '', boxName: null, location: null, rule: 'gateway_unreachable', ruleKind: 'gateway_unreachable', summary: 'gateway unreachable' });
    const email = buildEmail(message([gw]), 'ops-mail');
    expect(email.subject).toBe('[FIRING] critical: gateway unreachable');
    expect(email.text).toContain('FIRING critical gateway_unreachable: gateway unreachable; since 2026-01-01 00:00:00 UTC (5m ago)');
  });

  it('shows value, threshold and since in the text body', () => {
    const email = buildEmail(message([batteryItem]), 'ops-mail');
    expect(email.subject).toBe('[FIRING] warning: box SN-0007 "Dock 2" battery 12% below 20%');
    expect(email.text).toContain(
      '- FIRING warning battery-low: box SN-0007 "Dock 2" (Warehouse) battery 12% below 20%; value 12%; threshold below 20; since 2026-01-01 00:00:00 UTC (5m ago)',
    );
  });

  it('a grouped message counts the boxes in the subject and lists every box in both bodies', () => {
    const email = buildEmail(powerCut(30), 'ops-mail');
    expect(email.subject).toBe('[FIRING] critical: 30 boxes disconnected');
    for (let i = 1; i <= 30; i++) {
      const serial = `SN-${String(i).padStart(4, '0')}`;
      expect(email.text).toContain(`box ${serial}`);
      expect(email.html).toContain(`>${serial}<`);
    }
  });

  it('mixed groups say how many fire and how many resolved, with the highest firing severity', () => {
    const email = buildEmail(
      message([batteryItem, item({ status: 'resolved', resolvedAt: T0 + 60_000 }), item({ serial: 'SN-0001', severity: 'info', rule: 'firmware' })]),
      'ops-mail',
    );
    expect(email.subject).toBe('[FIRING 2, RESOLVED 1] warning: 3 alerts');
    expect(email.text).toMatch(/Firing \(2\):[\s\S]*Resolved \(1\):/);
    expect(email.text).toContain('fired 2026-01-01 00:00:00 UTC, resolved 2026-01-01 00:01:00 UTC (after 1m)');
  });

  it('escapes box text in HTML and keeps it readable in text', () => {
    const email = buildEmail(message([item({ boxName: HOSTILE, location: '<img src=x onerror=alert(1)>' })]), 'ops-mail');
    expect(email.html).not.toContain('<!channel>');
    expect(email.html).not.toContain('<img');
    expect(email.html).not.toContain('<http://evil');
    expect(email.html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(email.text).toContain(HOSTILE);
  });

  it('a box name cannot inject headers or lines into the subject', () => {
    const email = buildEmail(message([item({ boxName: 'Lobby\r\nBcc: victim@example.com' })]), 'ops-mail');
    expect(email.subject).not.toMatch(/[\r\n]/);
    expect(email.subject).toBe('[FIRING] critical: box SN-0042 "Lobby\\x0d\\x0aBcc: victim@example.com" disconnected');
  });

  it('test and delivery-failure messages', () => {
    const test = buildEmail({ kind: 'test', items: [], createdAt: T0, source: 'host-1' }, 'ops-mail');
    expect(test.subject).toBe('[TEST] boxwatch test notification');
    expect(test.text).toContain('from host-1');
    expect(test.text).toContain('"ops-mail"');
    const failure = buildEmail(
      { kind: 'delivery_failure', items: [], failures: [{ notifier: 'ops-slack', failingSince: T0, dead: 3, lastError: 'notifier "ops-slack": Slack answered HTTP 500' }], createdAt: T0 + 3_600_000 },
      'ops-mail',
    );
    expect(failure.subject).toBe('[DELIVERY FAILURE] notifications to "ops-slack" are failing since 2026-01-01 00:00:00 UTC');
    expect(failure.text).toContain('3 messages given up. Last error: notifier "ops-slack": Slack answered HTTP 500');
  });
});

describe('EmailNotifier over a real SMTP server', () => {
  const credentials = { user: 'boxwatch', pass: 'sm7p-P@ss/word' };
  let smtp: SmtpReceiver;
  const notifiers: EmailNotifier[] = [];
  const notifier = (smtpUrl: string, extra: { timeoutMs?: number } = {}): EmailNotifier => {
    const n = new EmailNotifier({ name: 'ops-mail', smtpUrl, from: 'boxwatch@example.com', to: ['ops@example.com', 'oncall@example.com'], ...extra });
    notifiers.push(n);
    return n;
  };

  beforeAll(async () => {
    smtp = await startSmtpReceiver({ auth: credentials });
  });
  afterEach(() => {
    smtp.accept();
  });
  afterAll(async () => {
    await Promise.all(notifiers.map((n) => n.close()));
    await smtp.close();
  });

  it('delivers subject, text and HTML parts, with login, to every recipient', async () => {
    const before = smtp.messages.length;
    await notifier(smtp.url()).send(powerCut(3));
    const [mail] = (await smtp.waitFor(before + 1)).slice(before);
    expect(mail?.subject).toBe('[FIRING] critical: 3 boxes disconnected');
    expect(mail?.to).toEqual(['ops@example.com', 'oncall@example.com']);
    expect(mail?.from).toBe('boxwatch@example.com');
    expect(mail?.user).toBe('boxwatch');
    expect(mail?.text).toContain('box SN-0003 "Box 3" (Site B) disconnected');
    expect(mail?.html).toContain('<table');
    expect(mail?.html).toContain('&lt;!channel&gt;');
    expect(mail?.html).not.toContain('<!channel>');
    expect(mail?.headers.get('auto-submitted')).toBe('auto-generated');
  });

  it('a server that is down is a retryable error without the password', async () => {
    const down = await startSmtpReceiver();
    const url = `smtp://${credentials.user}:${encodeURIComponent(credentials.pass)}@127.0.0.1:${down.port}`;
    await down.close();
    const err = await notifier(url).send(message([item()])).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotifyError);
    expect((err as NotifyError).retryable).toBe(true);
    expect((err as NotifyError).code).toBe('notify_unreachable');
    expect((err as NotifyError).message).toContain('cannot reach the SMTP server');
    for (const text of collectChain(err)) {
      expect(text).not.toContain(credentials.pass);
      expect(text).not.toContain(encodeURIComponent(credentials.pass));
    }
  });

  it('a temporary SMTP rejection (451) is retryable, a permanent one (550) is not', async () => {
    const n = notifier(smtp.url());
    smtp.rejectWith(451);
    const temporary = (await n.send(message([item()])).catch((e: unknown) => e)) as NotifyError;
    expect(temporary.retryable).toBe(true);
    expect(temporary.status).toBe(451);
    smtp.rejectWith(550, 'Mailbox unavailable');
    const permanent = (await n.send(message([item()])).catch((e: unknown) => e)) as NotifyError;
    expect(permanent).toBeInstanceOf(NotifyError);
    expect(permanent.retryable).toBe(false);
    expect(permanent.status).toBe(550);
    expect(permanent.message).toContain('Mailbox unavailable');
  });

  it('wrong credentials are a permanent authentication error that does not show them', async () => {
    const wrong = { user: 'boxwatch', pass: 'Wr0ngSecretPass' };
    const err = (await notifier(smtp.url(wrong)).send(message([item()])).catch((e: unknown) => e)) as NotifyError;
    expect(err.code).toBe('notify_auth');
    expect(err.retryable).toBe(false);
    const dump = collectChain(err).join('\n');
    expect(dump).not.toContain(wrong.pass);
    expect(dump).not.toContain(Buffer.from(`\u0000boxwatch\u0000${wrong.pass}`).toString('base64'));
  });

  it('delivers again after the server was stopped and restarted on the same port', async () => {
    const n = notifier(smtp.url());
    await smtp.stop();
    const err = (await n.send(message([item()])).catch((e: unknown) => e)) as NotifyError;
    expect(err.retryable).toBe(true);
    await smtp.start();
    const before = smtp.messages.length;
    await n.send(message([item({ status: 'resolved', resolvedAt: T0 + 60_000 })]));
    const mails = await smtp.waitFor(before + 1);
    expect(mails.at(-1)?.subject).toBe('[RESOLVED] critical: box SN-0042 "Lobby" disconnected');
  });

  it('rejects an unusable URL at construction without echoing it', () => {
    const url = 'http://user:Sup3rSecret@mail.example.com';
    const err = (() => {
      try {
        notifier(url);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(NotifyError);
    expect((err as NotifyError).code).toBe('notify_config');
    expect(collectChain(err).join('\n')).not.toContain('Sup3rSecret');
  });
});
