/**
 * Notifications: the message model, the channels behind one Notifier interface (one file each:
 * email, slack, console, webhook, alertmanager, pagerduty, teams, ntfy, telegram), the dispatcher
 * and the resender. `createNotifier` builds the original three from snake_case options;
 * from-config.ts builds every channel from the loaded configuration.
 */
import { ConsoleNotifier, type LineSink } from './console.js';
import { EmailNotifier } from './email.js';
import { SlackNotifier } from './slack.js';
import type { Notifier } from '../domain/notifications.js';

export type { AlertItem, DeliveryFailure, ItemStatus, MessageKind, NotificationMessage, Notifier, NotifierType, Severity } from '../domain/notifications.js';
export { NotifyError } from './errors.js';
export { EmailNotifier, buildEmail } from './email.js';
export { SlackNotifier, buildSlackPayload } from './slack.js';
export { ConsoleNotifier, buildConsoleLines } from './console.js';
export { WebhookNotifier, buildWebhookPayload, webhookSignature } from './webhook.js';
export { AlertmanagerNotifier, buildAlertmanagerAlerts } from './alertmanager.js';
export { PagerDutyNotifier, buildPagerDutyEvents } from './pagerduty.js';
export { TeamsNotifier, buildTeamsPayload } from './teams.js';
export { NtfyNotifier, buildNtfyPayload } from './ntfy.js';
export { TelegramNotifier, buildTelegramPayload } from './telegram.js';
export { Resender } from './resend.js';
export { Dispatcher, type DispatcherOptions, type DeliveryOutcome } from './dispatcher.js';
export type { OutboxRepository, OutboxRow, OutboxStats, UnreportedFailures } from '../domain/outbox.js';
export { DEFAULT_RETRY_POLICY, decideAfterFailure, isDead, nextAttemptAt, type RetryPolicy } from './retry.js';

/** A `notifiers:` entry as the configuration spells it (routing fields are the alert engine's). */
export type NotifierConfig =
  | { name: string; type: 'email'; smtp_url: string; from: string; to: readonly string[]; timeout_ms?: number }
  | { name: string; type: 'slack'; webhook_url: string; username?: string; icon_emoji?: string; timeout_ms?: number }
  | { name: string; type: 'console' };

/** Builds one channel. Throws a NotifyError (code notify_config) for an unusable URL; never echoes it. */
export function createNotifier(config: NotifierConfig, deps: { stdout?: LineSink } = {}): Notifier {
  switch (config.type) {
    case 'email':
      return new EmailNotifier({ name: config.name, smtpUrl: config.smtp_url, from: config.from, to: config.to, timeoutMs: config.timeout_ms });
    case 'slack':
      return new SlackNotifier({
        name: config.name,
        webhookUrl: config.webhook_url,
        username: config.username,
        iconEmoji: config.icon_emoji,
        timeoutMs: config.timeout_ms,
      });
    case 'console':
      return new ConsoleNotifier({ name: config.name, stream: deps.stdout });
  }
}
export { sendTestMessages, testMessage, type TestResult } from './test-message.js';
