import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ConfigError } from '../../src/errors.js';
import { parse } from 'yaml';
import { STORE_SECTIONS, formatConfig, parseConfig, validateConfigSections } from '../../src/config/index.js';
import { notifierSecrets, notifiersFromConfig } from '../../src/notify/from-config.js';

const ENV = {
  BOXWATCH_SECRET_KEY: 'sk_live_0123456789',
  SMTP_URL: 'smtp://boxwatch:MailPa55word@mail.example.com:587',
  SLACK_WEBHOOK_URL: 'https://hooks.slack.com/services/T000/B000/SlackS3cr3tT0ken',
  WEBHOOK_URL: 'https://hooks.example.com/boxwatch?token=HookT0kenHookT0ken',
  WEBHOOK_HMAC_SECRET: 'HmacS3cretHmacS3cret',
  ALERTMANAGER_URL: 'http://am-user:AmPa55word@alertmanager:9093',
  PAGERDUTY_ROUTING_KEY: 'R0utingKeyR0utingKey0123456789ab',
  TEAMS_WEBHOOK_URL: 'https://prod.westeurope.logic.azure.com/workflows/abc/triggers/manual/paths/invoke?sig=TeamsS1gTeamsS1g',
  NTFY_TOPIC_URL: 'https://ntfy.sh/boxwatch-T0picT0pic',
  NTFY_TOKEN: 'tk_NtfyT0kenNtfyT0ken',
  TELEGRAM_BOT_TOKEN: '123456789:TelegramT0kenTelegramT0ken',
  TELEGRAM_CHAT_ID: '-1001234567890',
};
const SECRETS = ['MailPa55word', 'SlackS3cr3tT0ken', 'HookT0kenHookT0ken', 'HmacS3cretHmacS3cret', 'AmPa55word', 'R0utingKeyR0utingKey', 'TeamsS1gTeamsS1g', 'T0picT0pic', 'NtfyT0kenNtfyT0ken', 'TelegramT0kenTelegramT0ken'];

/** The example with its commented notifier entries uncommented. */
function uncommentedExample(): string {
  return readFileSync('config/boxwatch.example.yaml', 'utf8').replace(/^ {2}# (- name:| {2}[a-z_]+:)/gm, '  $1');
}

describe('the example configuration shows one notifier of each type', () => {
  const config = parseConfig(uncommentedExample(), ENV);

  it('every commented channel is valid once uncommented, one of each type', () => {
    expect(config.notifiers.map((n) => n.type).sort()).toEqual(['alertmanager', 'console', 'email', 'ntfy', 'pagerduty', 'slack', 'teams', 'telegram', 'webhook']);
    expect(config.notifiers.find((n) => n.type === 'alertmanager')).toMatchObject({ resendInterval: 60_000 });
    expect(config.notifiers.find((n) => n.type === 'telegram')).toMatchObject({ chatId: '-1001234567890', parseMode: 'HTML', apiUrl: 'https://api.telegram.org', title: '{{ counts.firing }} firing ({{ severity }})' });
    expect(notifiersFromConfig(config.notifiers).map((n) => n.type)).toEqual(config.notifiers.map((n) => n.type));
  });

  it('check-config prints none of their secrets, and the unredacted print parses back', () => {
    const printed = formatConfig(config);
    for (const secret of SECRETS) expect(printed).not.toContain(secret);
    expect(printed).toContain('x-team: "[redacted]"');
    expect(parseConfig(formatConfig(config, { redact: false }), {})).toEqual(config);
  });

  it('read commands need none of the channels\' secrets', () => {
    const { config: bare, unset } = validateConfigSections(parse(uncommentedExample()), { BOXWATCH_SECRET_KEY: 'k' }, 'example', { uses: STORE_SECTIONS });
    expect(bare.notifiers).toHaveLength(9);
    expect(unset.map((u) => u.name)).toEqual(expect.arrayContaining(['TELEGRAM_BOT_TOKEN', 'PAGERDUTY_ROUTING_KEY', 'NTFY_TOPIC_URL', 'WEBHOOK_HMAC_SECRET']));
  });

  it('notifierSecrets lists every secret of every channel', () => {
    const all = config.notifiers.flatMap((n) => notifierSecrets(n)).join('\n');
    for (const secret of SECRETS) expect(all).toContain(secret);
  });
});

describe('channel configuration errors name the field', () => {
  const base = 'gateway: { secret_key: k }\nnotifiers:\n';
  const issues = (yaml: string): string[] => {
    try {
      parseConfig(base + yaml, {});
    } catch (err) {
      return (err as ConfigError).issues.map((i) => `${i.path}: ${i.message}`);
    }
    return [];
  };
  it.each([
    ['- { name: t, type: telegram, bot_token: nope, chat_id: 1 }', 'notifiers[0].bot_token: must be a bot token (123456:ABC...)'],
    ['- { name: p, type: pagerduty }', 'notifiers[0].routing_key: is required'],
    ['- { name: w, type: webhook, url: "ftp://x" }', 'notifiers[0].url: must be an http:// or https:// URL'],
    ['- { name: w, type: webhook, url: "http://x", hmac_secret: short }', 'notifiers[0].hmac_secret: must be at least 16 characters'],
    ['- { name: w, type: webhook, url: "http://x", headers: { "bad header": v } }', 'notifiers[0].headers.bad header: must be a header name (letters, digits and "-")'],
    ['- { name: a, type: alertmanager, url: "http://x", resend_interval: 0s }', 'notifiers[0].resend_interval: must be longer than 0s'],
    ['- { name: n, type: ntfy }', 'notifiers[0].url: is required'],
  ])('%s', (yaml, expected) => {
    expect(issues(yaml)).toContain(expected);
  });
});
