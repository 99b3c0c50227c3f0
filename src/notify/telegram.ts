/**
 * Telegram channel: the Bot API's `sendMessage` (`POST <api_url>/bot<token>/sendMessage`) to one
 * chat, with `parse_mode` HTML (default) or MarkdownV2. The title is bold, then one line per alert.
 * Every piece of text is escaped for the chosen mode (escapeHtml: `<`, `>`, `&`, quotes;
 * escapeTelegramMarkdownV2: the 18 reserved characters and the backslash), so a box called
 * `<b>*x*</b>` shows as written and never breaks the message (Telegram refuses a message whose
 * markup does not parse). Link previews are off. Telegram allows 4096 characters: text is cut
 * before escaping so that no escape sequence is cut in half.
 *
 * The bot token is part of the URL path: a secret, redacted from every error. A 429 carries
 * `parameters.retry_after` (seconds) in its JSON body, which the dispatcher's backoff honours.
 */
import { escapeTelegramMarkdownV2 } from './escape.js';
import { NotifyError } from './errors.js';
import { defaultText, type MessageText } from './format.js';
import { assertHttpUrl, post, type HttpChannel } from './http.js';
import type { NotificationMessage, Notifier } from '../domain/notifications.js';
import { escapeHtml, truncate } from '../text.js';
import { urlSecrets } from '../redact.js';

export const TELEGRAM_API_URL = 'https://api.telegram.org';
export type TelegramParseMode = 'HTML' | 'MarkdownV2';

export interface TelegramPayload {
  chat_id: string;
  text: string;
  parse_mode: TelegramParseMode;
  link_preview_options: { is_disabled: true };
}

/** The sendMessage body for one message. Pure. */
export function buildTelegramPayload(message: NotificationMessage, notifier: string, chatId: string, mode: TelegramParseMode, custom?: Partial<MessageText>): TelegramPayload {
  const fallback = defaultText(message, notifier);
  const escape = mode === 'HTML' ? escapeHtml : escapeTelegramMarkdownV2;
  const title = escape(truncate(custom?.title ?? fallback.title, 250));
  const lines = truncate(custom?.body ?? fallback.body, 3500)
    .split('\n')
    .map((l) => escape(l));
  const bold = mode === 'HTML' ? `<b>${title}</b>` : `*${title}*`;
  return { chat_id: chatId, text: [bold, '', ...lines].join('\n'), parse_mode: mode, link_preview_options: { is_disabled: true } };
}

/** `parameters.retry_after` of a Bot API error answer, in ms. */
export function telegramRetryAfter(body: string): number | undefined {
  try {
    const seconds = (JSON.parse(body) as { parameters?: { retry_after?: unknown } }).parameters?.retry_after;
    return typeof seconds === 'number' && seconds >= 0 ? seconds * 1000 : undefined;
  } catch {
    return undefined;
  }
}

export interface TelegramNotifierOptions {
  name: string;
  /** The bot token (`123456:ABC...`): a secret. */
  botToken: string;
  chatId: string;
  parseMode?: TelegramParseMode;
  /** Bot API server (default Telegram's; a local Bot API server or a test receiver). */
  apiUrl?: string;
  render?: (message: NotificationMessage) => Partial<MessageText> | undefined;
  timeoutMs?: number;
  now?: () => number;
}

export class TelegramNotifier implements Notifier {
  readonly name: string;
  readonly type = 'telegram' as const;
  private readonly channel: HttpChannel;
  private readonly endpoint: string;

  constructor(private readonly options: TelegramNotifierOptions) {
    this.name = options.name;
    const api = options.apiUrl ?? TELEGRAM_API_URL;
    assertHttpUrl(options.name, 'api_url', api);
    if (!/^\d+:[A-Za-z0-9_-]+$/.test(options.botToken)) {
      throw new NotifyError('notify_config', options.name, 'bot_token does not look like a bot token (123456:ABC...)', { retryable: false });
    }
    this.endpoint = `${api.replace(/\/+$/, '')}/bot${options.botToken}/sendMessage`;
    this.channel = { notifier: options.name, service: 'Telegram', secrets: [options.botToken, ...urlSecrets(this.endpoint)], timeoutMs: options.timeoutMs };
  }

  private payload(message: NotificationMessage): TelegramPayload {
    return buildTelegramPayload(message, this.name, this.options.chatId, this.options.parseMode ?? 'HTML', this.options.render?.(message));
  }

  preview(message: NotificationMessage): string[] {
    return [JSON.stringify(this.payload(message))];
  }

  async send(message: NotificationMessage, signal?: AbortSignal): Promise<void> {
    const payload = this.payload(message);
    await post(this.channel, this.endpoint, JSON.stringify(payload), { 'content-type': 'application/json', 'user-agent': 'boxwatch' }, {
      signal,
      now: this.options.now,
      retryAfterFromBody: telegramRetryAfter,
    });
  }
}
