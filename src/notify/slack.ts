/**
 * Slack channel: an incoming webhook, posted a Block Kit message (the shared JSON POST, http.ts).
 *
 * `buildSlackPayload` is the pure payload builder: a header block with the headline, then one
 * coloured attachment per status group (firing: colour of the highest severity; resolved: green)
 * with fields for box, location, value, threshold and since. Box text is escaped for mrkdwn. Block
 * Kit limits are respected (header 150 characters, 50 blocks, 10 fields per section, 2000
 * characters per field, 3000 per text): a big group lists the first boxes and summarises the rest.
 *
 * `SlackNotifier` sends it; its errors never carry the webhook URL.
 */
import { isFleetKey, fleetLabel } from '../box-id.js';
import { cleanText, escapeMrkdwn } from './escape.js';
import { assertHttpUrl, post, type HttpChannel } from './http.js';
import {
  boxLabel,
  failureLines,
  formatTime,
  headline,
  highestSeverity,
  splitByStatus,
  testText,
  thresholdText,
  valueText,
  type MessageText,
} from './format.js';
import type { AlertItem, NotificationMessage, Notifier, Severity } from '../domain/notifications.js';
import { truncate } from '../text.js';
import { urlSecrets } from '../redact.js';

export interface SlackText {
  type: 'plain_text' | 'mrkdwn';
  text: string;
}
export type SlackBlock =
  | { type: 'header'; text: { type: 'plain_text'; text: string } }
  | { type: 'section'; text?: SlackText; fields?: SlackText[] }
  | { type: 'context'; elements: SlackText[] };
export interface SlackAttachment {
  color: string;
  fallback: string;
  blocks: SlackBlock[];
}
/** The JSON body posted to the webhook. */
export interface SlackPayload {
  /** Notification fallback (mrkdwn). */
  text: string;
  blocks: SlackBlock[];
  attachments: SlackAttachment[];
}

/** Block Kit limits (https://docs.slack.dev/reference/block-kit/blocks). */
export const SLACK_LIMITS = {
  headerText: 150,
  blocksPerMessage: 50,
  fieldsPerSection: 10,
  fieldText: 2000,
  sectionText: 3000,
  contextElements: 10,
} as const;

/** At most this many items get a field of their own; the rest are summarised in one line. */
export const SLACK_MAX_LISTED_ITEMS = 50;

export const SLACK_COLOURS: Record<Severity | 'resolved' | 'neutral', string> = {
  critical: '#d0021b',
  warning: '#f2a900',
  info: '#2f80ed',
  resolved: '#2eb67d',
  neutral: '#8d8d8d',
};

/** `<!date^...>`: Slack shows the time in the reader's time zone; the fallback is UTC. */
function slackDate(ms: number): string {
  return `<!date^${Math.floor(ms / 1000)}^{date_short_pretty} {time}|${formatTime(ms)}>`;
}

const mrkdwn = (text: string): SlackText => ({ type: 'mrkdwn', text });

/** `*Label*\nvalue` with the value escaped and cut to fit a field. */
function field(label: string, value: string): SlackText {
  // Escaping can grow text fivefold (& -> &amp;): 300 characters stay within Slack's 2000 per field.
  return mrkdwn(`*${label}*\n${escapeMrkdwn(truncate(value, 300))}`);
}

function whenText(item: AlertItem): string {
  if (item.status === 'resolved' && item.resolvedAt != null) return `${slackDate(item.since)} → ${slackDate(item.resolvedAt)}`;
  return slackDate(item.since);
}

/** The fields of a message with one item. */
function detailFields(item: AlertItem): SlackText[] {
  const fields: SlackText[] = [field('Box', isFleetKey(item.serial) ? fleetLabel(item.serial) : boxLabel(item).replace(/^box /, ''))];
  if (item.location) fields.push(field('Location', item.location));
  const value = valueText(item);
  const threshold = thresholdText(item);
  if (value !== undefined) fields.push(field('Value', value));
  if (threshold !== undefined) fields.push(field('Threshold', threshold));
  fields.push(mrkdwn(`*${item.status === 'resolved' ? 'Fired → resolved' : 'Since'}*\n${whenText(item)}`));
  fields.push(field('Rule', `${item.rule} (${item.ruleKind}, ${item.severity})`));
  if (item.silencedUntil != null) fields.push(mrkdwn(`*Silenced until*\n${slackDate(item.silencedUntil)}`));
  if (item.ack != null) fields.push(field('Acknowledged', `${item.ack.by}: ${item.ack.comment}`));
  return fields;
}

/** One field per item in a group: `*SN-0042* "Lobby" · Hall A` then summary, value and time. */
function listField(item: AlertItem): SlackText {
  const title = isFleetKey(item.serial) ? `*${fleetLabel(item.serial)}*` : `*${escapeMrkdwn(truncate(cleanText(item.serial), 40))}*`;
  const name = !isFleetKey(item.serial) && item.boxName ? ` "${escapeMrkdwn(truncate(cleanText(item.boxName), 60))}"` : '';
  const location = item.location ? ` · ${escapeMrkdwn(truncate(cleanText(item.location), 60))}` : '';
  const summary = cleanText(item.summary);
  const parts = [escapeMrkdwn(truncate(summary, 120))];
  // The summary usually says the value already (`disconnected (last seen ...)`): not twice on one line.
  const extra = [valueText(item), thresholdText(item)].filter((x): x is string => x !== undefined && !says(summary, x));
  if (extra.length > 0) parts.push(escapeMrkdwn(truncate(extra.join(' / '), 60)));
  parts.push(item.status === 'resolved' ? `resolved ${whenText(item)}` : `since ${whenText(item)}`);
  if (item.status === 'repeat') parts.push('still firing');
  return mrkdwn(`${title}${name}${location}\n${parts.join(' · ')}`);
}

/** `text` holds `word` as a whole word or number (`12%` in `battery 12% below 20%`, not `2`). */
function says(text: string, word: string): boolean {
  const escaped = word.trim().replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return escaped !== '' && new RegExp(`(^|[^\\w.-])${escaped}($|[^\\w.])`, 'i').test(text);
}

function chunk<T>(list: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
}

/** `…and 70 more: SN-0051, SN-0052, ...` cut to the section text limit. */
function overflowBlock(rest: readonly AlertItem[]): SlackBlock {
  const names = rest.map((i) => (isFleetKey(i.serial) ? fleetLabel(i.serial) : cleanText(i.serial))).join(', ');
  const text = `…and ${rest.length} more: ${escapeMrkdwn(names)}`;
  return { type: 'section', text: mrkdwn(truncate(text, SLACK_LIMITS.sectionText)) };
}

/**
 * Builds the webhook body of one message. Pure. `notifier` names the channel in test messages;
 * `custom` holds the rendered `title` (header) and `body` (one section instead of the fields) templates.
 */
export function buildSlackPayload(message: NotificationMessage, notifier: string, custom?: Partial<MessageText>): SlackPayload {
  const title = cleanText(custom?.title ?? headline(message));
  const header: SlackBlock = { type: 'header', text: { type: 'plain_text', text: truncate(title, SLACK_LIMITS.headerText) } };
  const footer: SlackBlock = {
    type: 'context',
    elements: [mrkdwn(escapeMrkdwn(`boxwatch${message.source ? ` · ${message.source}` : ''}`) + ` · ${slackDate(message.createdAt)}`)],
  };
  const text = escapeMrkdwn(truncate(title, 300));

  if (message.kind !== 'alert' || custom?.body !== undefined) {
    const lines = custom?.body !== undefined ? custom.body.split('\n') : message.kind === 'test' ? [testText(message, notifier)] : failureLines(message);
    const { firing } = splitByStatus(message.items);
    const alertColour = firing.length > 0 ? SLACK_COLOURS[highestSeverity(firing)] : SLACK_COLOURS.resolved;
    const colour = message.kind === 'test' ? SLACK_COLOURS.neutral : message.kind === 'alert' ? alertColour : SLACK_COLOURS.critical;
    const blocks: SlackBlock[] = lines
      .slice(0, SLACK_LIMITS.blocksPerMessage - 3)
      .map((l) => ({ type: 'section', text: mrkdwn(escapeMrkdwn(truncate(l, Math.floor(SLACK_LIMITS.sectionText / 5)))) }));
    return { text, blocks: [header], attachments: [{ color: colour, fallback: text, blocks: [...blocks, footer] }] };
  }

  const { firing, resolved } = splitByStatus(message.items);
  const attachments: SlackAttachment[] = [];
  let listed = 0;
  for (const [group, colour] of [
    [firing, SLACK_COLOURS[highestSeverity(firing)]],
    [resolved, SLACK_COLOURS.resolved],
  ] as const) {
    if (group.length === 0) continue;
    const blocks: SlackBlock[] = [];
    const only = message.items.length === 1 ? message.items[0] : undefined;
    if (only !== undefined) {
      blocks.push({ type: 'section', text: mrkdwn(escapeMrkdwn(truncate(cleanText(only.summary), 500))) });
      blocks.push({ type: 'section', fields: detailFields(only) });
    } else {
      const shown = group.slice(0, Math.max(0, SLACK_MAX_LISTED_ITEMS - listed));
      listed += shown.length;
      for (const part of chunk(shown, SLACK_LIMITS.fieldsPerSection)) blocks.push({ type: 'section', fields: part.map(listField) });
      if (shown.length < group.length) blocks.push(overflowBlock(group.slice(shown.length)));
    }
    attachments.push({ color: colour, fallback: text, blocks });
  }
  // The footer goes into the last attachment so that it shares its colour bar.
  attachments.at(-1)?.blocks.push(footer);
  return { text, blocks: [header], attachments };
}

export interface SlackNotifierOptions {
  name: string;
  /** The incoming webhook URL: a secret, never logged or shown. */
  webhookUrl: string;
  /** Request timeout in ms (default 10 s). */
  timeoutMs?: number;
  username?: string;
  iconEmoji?: string;
  /** The rendered `title` and `body` templates, when configured. */
  render?: (message: NotificationMessage) => Partial<MessageText> | undefined;
}


/** Posts each message to one incoming webhook. */
export class SlackNotifier implements Notifier {
  readonly name: string;
  readonly type = 'slack' as const;
  private readonly channel: HttpChannel;

  constructor(private readonly options: SlackNotifierOptions) {
    this.name = options.name;
    assertHttpUrl(options.name, 'webhook_url', options.webhookUrl);
    const secrets = urlSecrets(options.webhookUrl);
    this.channel = { notifier: options.name, service: 'Slack', unreachable: 'the Slack webhook', secrets, timeoutMs: options.timeoutMs };
  }

  preview(message: NotificationMessage): string[] {
    return [JSON.stringify(buildSlackPayload(message, this.name, this.options.render?.(message)))];
  }

  async send(message: NotificationMessage, signal?: AbortSignal): Promise<void> {
    const payload = {
      ...(this.options.username ? { username: this.options.username } : {}),
      ...(this.options.iconEmoji ? { icon_emoji: this.options.iconEmoji } : {}),
      ...buildSlackPayload(message, this.name, this.options.render?.(message)),
    };
    await post(this.channel, this.options.webhookUrl, JSON.stringify(payload), { 'content-type': 'application/json', 'user-agent': 'boxwatch' }, { signal });
  }
}
