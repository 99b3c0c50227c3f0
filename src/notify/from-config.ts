/** Builds the configured notifiers (the `notifiers:` section, as loaded by src/config). */
import type { Config } from '../config/index.js';
import { AlertmanagerNotifier } from './alertmanager.js';
import type { LineSink } from './console.js';
import { urlSecrets } from './errors.js';
import { createNotifier } from './index.js';
import { NtfyNotifier } from './ntfy.js';
import { PagerDutyNotifier } from './pagerduty.js';
import { TeamsNotifier } from './teams.js';
import { TelegramNotifier } from './telegram.js';
import type { Notifier } from './types.js';
import { WebhookNotifier } from './webhook.js';

type NotifierEntry = Config['notifiers'][number];

export interface NotifierDeps {
  /** Where the console notifier writes (default stdout). */
  stdout?: LineSink;
  /** The time of sending (signatures, Alertmanager's endsAt); default the system clock. */
  now?: () => number;
}

export function notifierFromConfig(n: NotifierEntry, deps: NotifierDeps = {}): Notifier {
  const { now } = deps;
  switch (n.type) {
    case 'email':
      return createNotifier({ name: n.name, type: 'email', smtp_url: n.smtpUrl, from: n.from, to: n.to });
    case 'slack':
      return createNotifier({ name: n.name, type: 'slack', webhook_url: n.webhookUrl });
    case 'console':
      return createNotifier({ name: n.name, type: 'console' }, deps);
    case 'webhook':
      return new WebhookNotifier({ name: n.name, url: n.url, hmacSecret: n.hmacSecret, headers: n.headers, now });
    case 'alertmanager':
      return new AlertmanagerNotifier({ name: n.name, url: n.url, resendIntervalMs: n.resendInterval, now });
    case 'pagerduty':
      return new PagerDutyNotifier({ name: n.name, routingKey: n.routingKey, url: n.url, now });
    case 'teams':
      return new TeamsNotifier({ name: n.name, webhookUrl: n.webhookUrl, now });
    case 'ntfy':
      return new NtfyNotifier({ name: n.name, url: n.url, token: n.token, now });
    case 'telegram':
      return new TelegramNotifier({ name: n.name, botToken: n.botToken, chatId: n.chatId, parseMode: n.parseMode, apiUrl: n.apiUrl, now });
  }
}

export function notifiersFromConfig(entries: Config['notifiers'], deps: NotifierDeps = {}): Notifier[] {
  return entries.map((n) => notifierFromConfig(n, deps));
}

/** Every secret of one configured notifier (URLs with tokens, passwords, keys, header values). */
export function notifierSecrets(n: NotifierEntry): string[] {
  switch (n.type) {
    case 'email':
      return urlSecrets(n.smtpUrl);
    case 'slack':
      return urlSecrets(n.webhookUrl);
    case 'console':
      return [];
    case 'webhook':
      return [...urlSecrets(n.url), ...(n.hmacSecret ? [n.hmacSecret] : []), ...Object.values(n.headers ?? {})];
    case 'alertmanager':
      return urlSecrets(n.url);
    case 'pagerduty':
      return [n.routingKey];
    case 'teams':
      return urlSecrets(n.webhookUrl);
    case 'ntfy':
      return [...urlSecrets(n.url), ...(n.token ? [n.token] : [])];
    case 'telegram':
      return [n.botToken];
  }
}
