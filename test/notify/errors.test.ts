import { describe, expect, it } from 'vitest';
import { BoxwatchError } from '../../src/errors.js';
import { NotifyError } from '../../src/notify/errors.js';
import { post } from '../../src/notify/http.js';
import { redact, safeCause, urlSecrets } from '../../src/redact.js';
import { collectChain } from './secrets.js';

const WEBHOOK = 'https://hooks.slack.com/services/T0123ABCD/B0123ABCD/XyZsecretTokenValue42';
const SMTP = 'smtp://mailer:p%40ss%2Fw0rd!@smtp.example.com:587';

describe('redaction', () => {
  it('removes URLs, tokens and passwords in every form', () => {
    const secrets = [...urlSecrets(WEBHOOK), ...urlSecrets(SMTP)];
    expect(redact(`POST ${WEBHOOK} failed`, secrets)).toBe('POST [redacted] failed');
    expect(redact('token XyZsecretTokenValue42 rejected', secrets)).toBe('token [redacted] rejected');
    expect(redact('auth p@ss/w0rd! and p%40ss%2Fw0rd!', secrets)).toBe('auth [redacted] and [redacted]');
    expect(redact(`connect to ${SMTP}`, secrets)).toBe('connect to [redacted]');
  });

  it('a library error with the URL in fields and causes leaves nothing behind', () => {
    // Shaped like axios/undici errors: the URL in config, request and a nested cause.
    const inner = Object.assign(new Error(`getaddrinfo ENOTFOUND for ${WEBHOOK}`), { code: 'ENOTFOUND', hostname: 'hooks.slack.com' });
    const lib = Object.assign(new Error(`Request to ${WEBHOOK} failed`, { cause: inner }), {
      code: 'ERR_NETWORK',
      config: { url: WEBHOOK, headers: { authorization: 'Bearer XyZsecretTokenValue42' } },
      request: { path: '/services/T0123ABCD/B0123ABCD/XyZsecretTokenValue42' },
    });
    const err = new NotifyError('notify_unreachable', 'ops-slack', 'cannot reach the Slack webhook', {
      retryable: true,
      cause: safeCause(lib, urlSecrets(WEBHOOK)),
    });
    expect(err).toBeInstanceOf(BoxwatchError);
    expect(err.retryable).toBe(true);
    const dump = collectChain(err).join('\n');
    expect(dump).not.toContain('XyZsecretTokenValue42');
    expect(dump).not.toContain('/services/');
    // What is useful survives: names, codes, the redacted messages.
    expect(dump).toContain('ERR_NETWORK');
    expect(dump).toContain('ENOTFOUND');
    expect(dump).toContain('Request to [redacted] failed');
  });
});

describe('the JSON POST of the HTTP channels', () => {
  it('refuses a URL with credentials without quoting it, even a password too short to redact', async () => {
    const url = 'http://ops:pw1@127.0.0.1:1/hooks/T0K3N-abcdefgh';
    const err = await post({ notifier: 'hook', service: 'the webhook', secrets: [] }, url, '{}', {}).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'notify_unreachable', retryable: true });
    expect((err as Error).message).toMatch(/includes credentials$/);
    const dump = collectChain(err).join('\n');
    expect(dump).not.toContain('pw1');
    expect(dump).not.toContain('T0K3N');
  });
});
