/**
 * ntfy channel: publishes to a topic as JSON (`POST` to the server's root with `topic` in the
 * body, docs.ntfy.sh/publish/#publish-as-json), so that titles with any characters need no
 * header encoding. The configured `url` is the topic URL (`https://ntfy.sh/boxwatch-alerts`);
 * on ntfy.sh the topic name is the only protection, so the URL is treated as a secret.
 *
 * Priority from severity: critical 5 (max), warning 4 (high), info 3 (default); a message with
 * nothing firing (resolved) 2 (low). Tags show an emoji. Plain text (no Markdown): box text only
 * has its control characters removed. An optional access token is sent as `Authorization: Bearer`.
 */
import { cleanText } from './escape.js';
import { NotifyError } from './errors.js';
import { defaultText, highestSeverity, splitByStatus, type MessageText } from './format.js';
import { assertHttpUrl, post, type HttpChannel } from './http.js';
import type { NotificationMessage, Notifier, Severity } from '../domain/notifications.js';
import { truncate, truncateBytes } from '../text.js';
import { urlSecrets } from '../redact.js';

export interface NtfyPayload {
  topic: string;
  title: string;
  message: string;
  priority: 1 | 2 | 3 | 4 | 5;
  tags: string[];
}

const PRIORITY: Record<Severity, 3 | 4 | 5> = { critical: 5, warning: 4, info: 3 };
const TAG: Record<Severity, string> = { critical: 'rotating_light', warning: 'warning', info: 'information_source' };

/** Splits a topic URL into the server's publish URL and the topic. */
export function splitTopicUrl(url: string): { server: string; topic: string } {
  const u = new URL(url);
  const path = u.pathname.replace(/\/+$/, '');
  const slash = path.lastIndexOf('/');
  const topic = decodeURIComponent(path.slice(slash + 1));
  return { server: `${u.origin}${path.slice(0, slash)}/`, topic };
}

/** The JSON body for one message. Pure. */
export function buildNtfyPayload(message: NotificationMessage, notifier: string, topic: string, custom?: Partial<MessageText>): NtfyPayload {
  const fallback = defaultText(message, notifier);
  const title = cleanText(custom?.title ?? fallback.title);
  // ntfy turns messages over 4096 bytes into attachments: stay well below.
  const body = (custom?.body ?? fallback.body)
    .split('\n')
    .map((l) => cleanText(l))
    .join('\n');
  let priority: NtfyPayload['priority'] = 3;
  let tags: string[] = [];
  if (message.kind === 'delivery_failure') {
    priority = 5;
    tags = ['rotating_light'];
  } else if (message.kind === 'alert') {
    const { firing } = splitByStatus(message.items);
    const severity = highestSeverity(firing);
    priority = firing.length === 0 ? 2 : PRIORITY[severity];
    tags = [firing.length === 0 ? 'white_check_mark' : TAG[severity]];
  }
  return { topic, title: truncate(title, 250), message: truncateBytes(body, 3800), priority, tags };
}

export interface NtfyNotifierOptions {
  name: string;
  /** The topic URL: a secret (the topic name is the password on public servers). */
  url: string;
  /** An access token (`tk_...`): a secret. */
  token?: string;
  render?: (message: NotificationMessage) => Partial<MessageText> | undefined;
  timeoutMs?: number;
  now?: () => number;
}

export class NtfyNotifier implements Notifier {
  readonly name: string;
  readonly type = 'ntfy' as const;
  private readonly channel: HttpChannel;
  private readonly server: string;
  private readonly topic: string;

  constructor(private readonly options: NtfyNotifierOptions) {
    this.name = options.name;
    assertHttpUrl(options.name, 'url', options.url);
    ({ server: this.server, topic: this.topic } = splitTopicUrl(options.url));
    if (this.topic === '') throw new NotifyError('notify_config', options.name, 'url must name a topic (https://ntfy.sh/TOPIC)', { retryable: false });
    const secrets = [...urlSecrets(options.url), this.topic, ...(options.token ? [options.token] : [])];
    this.channel = { notifier: options.name, service: 'ntfy', secrets, timeoutMs: options.timeoutMs };
  }

  preview(message: NotificationMessage): string[] {
    return [JSON.stringify(buildNtfyPayload(message, this.name, this.topic, this.options.render?.(message)))];
  }

  async send(message: NotificationMessage, signal?: AbortSignal): Promise<void> {
    const payload = buildNtfyPayload(message, this.name, this.topic, this.options.render?.(message));
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'boxwatch' };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    await post(this.channel, this.server, JSON.stringify(payload), headers, { signal, now: this.options.now });
  }
}
