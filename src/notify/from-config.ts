/** Builds the configured notifiers (the `notifiers:` section, as loaded by src/config). */
import type { Config } from '../config/index.js';
import { AlertmanagerNotifier } from './alertmanager.js';
import { ConsoleNotifier, type LineSink } from './console.js';
import { EmailNotifier } from './email.js';
import { SlackNotifier } from './slack.js';
import { jsonStringEscape, templateRenderer, type FleetStats, type TemplateFailure } from './templates.js';
import { NtfyNotifier } from './ntfy.js';
import { PagerDutyNotifier } from './pagerduty.js';
import { TeamsNotifier } from './teams.js';
import { TelegramNotifier } from './telegram.js';
import type { Notifier } from '../domain/notifications.js';
import { WebhookNotifier } from './webhook.js';
import { urlSecrets } from '../redact.js';

type NotifierEntry = Config['notifiers'][number];

export interface NotifierDeps {
  /** Where the console notifier writes (default stdout). */
  stdout?: LineSink;
  /** The time of sending (signatures, Alertmanager's endsAt); default the system clock. */
  now?: () => number;
  /** Where template render failures go (the daemon: `logTemplateFailure(logger)`). */
  onTemplateFailure?: (failure: TemplateFailure) => void;
  /** Fleet counts for templates (`fleet.*`), read at sending time. */
  fleet?: () => FleetStats | undefined;
  /** Where people reach the dashboard (`http.external_url`): links in messages. */
  externalUrl?: string;
}

/** The dashboard page of a box under `externalUrl`. */
export function boxLink(externalUrl: string | undefined, serial: string): string | undefined {
  if (externalUrl === undefined) return undefined;
  const base = externalUrl.endsWith('/') ? externalUrl : `${externalUrl}/`;
  return new URL(`boxes/${encodeURIComponent(serial)}`, base).toString();
}

export function notifierFromConfig(n: NotifierEntry, deps: NotifierDeps = {}): Notifier {
  const { now } = deps;
  const externalUrl = deps.externalUrl;
  const templateOptions = { onFailure: deps.onTemplateFailure, fleetNow: deps.fleet, link: (serial: string) => boxLink(externalUrl, serial) };
  const render = templateRenderer(n.name, { title: n.title, body: n.body }, templateOptions);
  switch (n.type) {
    case 'email':
      return new EmailNotifier({ name: n.name, smtpUrl: n.smtpUrl, from: n.from, to: n.to, render });
    case 'slack':
      return new SlackNotifier({ name: n.name, webhookUrl: n.webhookUrl, render });
    case 'console':
      return new ConsoleNotifier({ name: n.name, stream: deps.stdout, render });
    case 'webhook': {
      // The body template is the whole request body: outputs are JSON-string escaped (`| raw` to opt out).
      const bodyRender = templateRenderer(n.name, { body: n.body }, { ...templateOptions, outputEscape: jsonStringEscape });
      const titleRender = templateRenderer(n.name, { title: n.title }, templateOptions);
      return new WebhookNotifier({
        name: n.name,
        url: n.url,
        hmacSecret: n.hmacSecret,
        headers: n.headers,
        externalUrl,
        now,
        render: titleRender,
        renderBody: bodyRender && ((m) => bodyRender(m)?.body),
      });
    }
    case 'alertmanager':
      return new AlertmanagerNotifier({ name: n.name, url: n.url, resendIntervalMs: n.resendInterval, generatorUrl: externalUrl, now, render });
    case 'pagerduty':
      return new PagerDutyNotifier({ name: n.name, routingKey: n.routingKey, url: n.url, clientUrl: externalUrl, now, render });
    case 'teams':
      return new TeamsNotifier({ name: n.name, webhookUrl: n.webhookUrl, now, render });
    case 'ntfy':
      return new NtfyNotifier({ name: n.name, url: n.url, token: n.token, now, render });
    case 'telegram':
      return new TelegramNotifier({ name: n.name, botToken: n.botToken, chatId: n.chatId, parseMode: n.parseMode, apiUrl: n.apiUrl, now, render });
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
