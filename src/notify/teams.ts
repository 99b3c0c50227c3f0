/**
 * Microsoft Teams channel: a Workflows ("Post to a channel when a webhook request is received")
 * webhook, posted a message with one Adaptive Card attachment (the Office 365 connectors and their
 * MessageCard format are retired).
 *
 * The card: a heading with the title (coloured by severity, green when resolved), then per alert a
 * line and a FactSet (box, location, value, threshold, since, rule); at most TEAMS_MAX_LISTED_ITEMS
 * alerts are listed and the others summarised, so a big group stays under Teams' card size limit.
 * With a `body` template the rendered body replaces the alert list. Box text is escaped for the
 * Markdown subset cards render (escapeCardMarkdown).
 */
import { isFleetKey, fleetLabel } from '../box-id.js';
import { cleanText, escapeCardMarkdown } from './escape.js';
import { boxLabel, defaultText, formatTime, highestSeverity, splitByStatus, thresholdText, timeText, valueText, type MessageText } from './format.js';
import { assertHttpUrl, post, type HttpChannel } from './http.js';
import type { AlertItem, NotificationMessage, Notifier } from '../domain/notifications.js';
import { truncate } from '../text.js';
import { urlSecrets } from '../redact.js';

export const TEAMS_MAX_LISTED_ITEMS = 20;

export type CardElement =
  | { type: 'TextBlock'; text: string; wrap: true; weight?: 'Bolder'; size?: 'Medium' | 'Small'; color?: 'Attention' | 'Warning' | 'Good' | 'Accent' | 'Default'; isSubtle?: boolean; style?: 'heading'; spacing?: 'Medium' }
  | { type: 'FactSet'; facts: { title: string; value: string }[] }
  | { type: 'Container'; items: CardElement[]; separator?: boolean };

export interface TeamsPayload {
  type: 'message';
  attachments: [
    {
      contentType: 'application/vnd.microsoft.card.adaptive';
      contentUrl: null;
      content: { $schema: string; type: 'AdaptiveCard'; version: '1.4'; msteams: { width: 'Full' }; body: CardElement[] };
    },
  ];
}

const text = (t: string, extra: Partial<Extract<CardElement, { type: 'TextBlock' }>> = {}): CardElement => ({ type: 'TextBlock', text: t, wrap: true, ...extra });
const fact = (title: string, value: string): { title: string; value: string } => ({ title, value: escapeCardMarkdown(truncate(value, 300)) });

function itemBlock(item: AlertItem, now: number): CardElement {
  const facts = [fact('Box', isFleetKey(item.serial) ? fleetLabel(item.serial) : boxLabel(item).replace(/^box /, ''))];
  if (item.location) facts.push(fact('Location', item.location));
  const value = valueText(item);
  const threshold = thresholdText(item);
  if (value !== undefined) facts.push(fact('Value', value));
  if (threshold !== undefined) facts.push(fact('Threshold', threshold));
  facts.push(fact(item.status === 'resolved' ? 'Fired, resolved' : 'Since', timeText(item, now).replace(/^since /, '')));
  facts.push(fact('Rule', `${item.rule} (${item.ruleKind}, ${item.severity})`));
  if (item.ack != null) facts.push(fact('Acknowledged', `${item.ack.by}: ${item.ack.comment}`));
  const status = item.status === 'resolved' ? 'RESOLVED' : item.status === 'repeat' ? 'STILL FIRING' : 'FIRING';
  const what = escapeCardMarkdown(truncate(cleanText(item.summary).trim() || item.rule, 300));
  return { type: 'Container', separator: true, items: [text(`**${status}** ${what}`), { type: 'FactSet', facts }] };
}

function titleColour(message: NotificationMessage): 'Attention' | 'Warning' | 'Good' | 'Accent' | 'Default' {
  if (message.kind === 'test') return 'Accent';
  if (message.kind === 'delivery_failure') return 'Attention';
  const { firing } = splitByStatus(message.items);
  if (firing.length === 0) return 'Good';
  const severity = highestSeverity(firing);
  return severity === 'critical' ? 'Attention' : severity === 'warning' ? 'Warning' : 'Accent';
}

/**
 * The body of the Workflows request for one message. Pure. `custom` holds the rendered templates
 * when the notifier has any (undefined: the default card).
 */
export function buildTeamsPayload(message: NotificationMessage, notifier: string, custom?: Partial<MessageText>): TeamsPayload {
  const fallback = defaultText(message, notifier);
  const title = custom?.title ?? fallback.title;
  const body: CardElement[] = [text(escapeCardMarkdown(truncate(title, 300)), { weight: 'Bolder', size: 'Medium', style: 'heading', color: titleColour(message) })];
  if (custom?.body !== undefined || message.kind !== 'alert') {
    const lines = (custom?.body ?? fallback.body).split('\n').slice(0, 200);
    body.push(text(lines.map((l) => escapeCardMarkdown(truncate(l, 1000))).join('\n\n')));
  } else {
    const shown = message.items.slice(0, TEAMS_MAX_LISTED_ITEMS);
    for (const item of shown) body.push(itemBlock(item, message.createdAt));
    const rest = message.items.slice(shown.length);
    if (rest.length > 0) {
      const names = rest.map((i) => (isFleetKey(i.serial) ? fleetLabel(i.serial) : cleanText(i.serial))).join(', ');
      body.push(text(escapeCardMarkdown(truncate(`…and ${rest.length} more: ${names}`, 2000))));
    }
  }
  body.push(text(escapeCardMarkdown(`boxwatch${message.source ? ` · ${message.source}` : ''} · ${formatTime(message.createdAt)}`), { isSubtle: true, size: 'Small' }));
  return {
    type: 'message',
    attachments: [
      {
        contentType: 'application/vnd.microsoft.card.adaptive',
        contentUrl: null,
        content: { $schema: 'http://adaptivecards.io/schemas/adaptive-card.json', type: 'AdaptiveCard', version: '1.4', msteams: { width: 'Full' }, body },
      },
    ],
  };
}

export interface TeamsNotifierOptions {
  name: string;
  /** The Workflows webhook URL (it carries a signature): a secret. */
  webhookUrl: string;
  /** The rendered `title` and `body` templates, when configured. */
  render?: (message: NotificationMessage) => Partial<MessageText> | undefined;
  timeoutMs?: number;
  now?: () => number;
}

export class TeamsNotifier implements Notifier {
  readonly name: string;
  readonly type = 'teams' as const;
  private readonly channel: HttpChannel;

  constructor(private readonly options: TeamsNotifierOptions) {
    this.name = options.name;
    assertHttpUrl(options.name, 'webhook_url', options.webhookUrl);
    this.channel = { notifier: options.name, service: 'the Teams workflow', secrets: urlSecrets(options.webhookUrl), timeoutMs: options.timeoutMs };
  }

  preview(message: NotificationMessage): string[] {
    return [JSON.stringify(buildTeamsPayload(message, this.name, this.options.render?.(message)))];
  }

  async send(message: NotificationMessage, signal?: AbortSignal): Promise<void> {
    const payload = buildTeamsPayload(message, this.name, this.options.render?.(message));
    await post(this.channel, this.options.webhookUrl, JSON.stringify(payload), { 'content-type': 'application/json', 'user-agent': 'boxwatch' }, { signal, now: this.options.now });
  }
}
