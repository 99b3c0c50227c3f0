/**
 * `boxwatch notifications [--since 24h] [--notifier N] [--status delivered|pending|dead]
 * [--alert ID] [--format table|json]`: the notification log, read from the outbox (newest first):
 * per message and notifier its status, attempts, delivery time, the alerts it told about and the
 * last error (secrets redacted). The same view as `/api/notifications` (src/views/notifications.ts).
 */
import type { Command } from 'commander';
import { UsageError } from '../errors.js';
import { notifierSecrets } from '../notify/from-config.js';
import { formatTime, isoTime, relativeTime } from '../time-format.js';
import { NOTIFICATION_STATUSES, notificationJson, readNotificationViews, type NotificationStatus, type NotificationView } from '../views/notifications.js';
import type { CliContext, RegisterCommand } from './context.js';
import { formatOption, formatTable, type OutputFormat } from './output.js';
import { dbOption, withStore } from './store-access.js';
import { parseRange } from './time-range.js';

interface NotificationsOptions {
  since?: string;
  notifier?: string;
  status?: string;
  alert?: string;
  format: OutputFormat;
  config?: string;
  db?: string;
}

/** At most this many alert ids are listed in a table row; the rest are counted. */
const LISTED_ALERTS = 3;

function alertsText(v: NotificationView): string {
  if (v.items.length === 0) return '-';
  const shown = v.items.slice(0, LISTED_ALERTS).map((i) => `${i.alert} ${i.status}`);
  return v.items.length > LISTED_ALERTS ? `${shown.join(', ')} +${v.items.length - LISTED_ALERTS} more` : shown.join(', ');
}

/** When it was delivered, given up, or is tried next. */
function outcomeText(v: NotificationView, now: number): string {
  if (v.deliveredAt !== null) return formatTime(v.deliveredAt);
  if (v.gaveUpAt !== null) return `gave up ${formatTime(v.gaveUpAt)}`;
  return v.nextAttemptAt !== null ? `next try ${relativeTime(v.nextAttemptAt, now)}` : '';
}

function parseStatus(text: string | undefined): NotificationStatus | undefined {
  if (text === undefined) return undefined;
  const status = NOTIFICATION_STATUSES.find((s) => s === text);
  if (status === undefined) throw new UsageError(`--status must be one of ${NOTIFICATION_STATUSES.join(', ')}, not "${text}"`);
  return status;
}

export const registerNotifications: RegisterCommand = (program: Command, ctx: CliContext) => {
  program
    .command('notifications')
    .description('the notification log: every message per notifier with its delivery status, attempts and last error')
    .option('--since <duration>', 'how far back, e.g. 24h (default 24h)')
    .option('-n, --notifier <name>', 'only this notifier')
    .option('--status <status>', `only messages in this state: ${NOTIFICATION_STATUSES.join(', ')}`)
    .option('--alert <id>', 'only messages about this alert: rule/serial as `boxwatch alerts` shows it (the rule alone for gateway alerts)')
    .addOption(formatOption(['table', 'json']))
    .option('-c, --config <file>', 'configuration file')
    .addOption(dbOption())
    .action((opts: NotificationsOptions) => {
      const status = parseStatus(opts.status);
      return withStore(opts, ctx, async (_store, now, { alerts, config }) => {
        const { from } = parseRange({ since: opts.since }, now, '24h');
        const secrets = (config?.notifiers ?? []).flatMap((n) => notifierSecrets(n));
        const views = await readNotificationViews(alerts, { since: from, notifier: opts.notifier, status, alert: opts.alert }, { secrets });
        if (opts.format === 'json') {
          ctx.out(JSON.stringify({ now: isoTime(now), since: isoTime(from), notifications: views.map(notificationJson) }, null, 2) + '\n');
          return;
        }
        if (views.length === 0) {
          ctx.out(`no notifications since ${formatTime(from)}\n`);
          return;
        }
        ctx.out(
          formatTable(
            ['CREATED', 'NOTIFIER', 'STATUS', 'ATTEMPTS', 'DELIVERED', 'ALERTS', 'LAST ERROR'],
            views.map((v) => [formatTime(v.createdAt), v.notifier, v.status, String(v.attempts), outcomeText(v, now), alertsText(v), v.lastError ?? '']),
          ),
        );
      });
    });
};
