/**
 * `boxwatch alerts [--active] [--since 7d] [--format table|json]`: the alerts open now (pending,
 * firing, resolved-but-not-yet-at-rest) and those that changed within `--since`, with their
 * transitions. For open alerts the HELD BACK column says why they are not notified right now
 * (silence, inhibition, gateway down), computed with the engine's own functions. NOTIFIED says
 * where its latest notification in the window went: `ops-mail, ops-slack (pending), pager (dead)`
 * (a bare name: delivered). ACKED: who acknowledged it (`boxwatch ack`) while the ack holds.
 */
import { isFleetKey, fleetLabel } from '../box-id.js';
import type { Command } from 'commander';
import { parseAlertKey, type AlertValue, type HeldBackReason } from '../alerts/index.js';
import { formatDuration } from '../duration.js';
import { formatTime, isoTime, relativeTime } from '../time-format.js';
import { alertJson, alertViewSource, readAlertViews, type AlertView } from '../views/alerts.js';
import { terminalSafe } from './call-gateway.js';
import type { CliContext, RegisterCommand } from './context.js';
import { formatOption, formatTable, type OutputFormat } from './output.js';
import { dbOption, withStore } from './store-access.js';
import { parseRange } from './time-range.js';

interface AlertsOptions {
  active?: boolean;
  since?: string;
  format: OutputFormat;
  config?: string;
  db?: string;
}

/** `silenced (ab12cd34)`, `inhibited by box-offline`, `gateway down`. */
export function heldBackText(reason: HeldBackReason | null, by: readonly string[]): string {
  switch (reason) {
    case null:
      return '';
    case 'gateway_down':
      return 'gateway down';
    case 'silenced':
      return by.length > 0 ? `silenced (${by.join(', ')})` : 'silenced';
    case 'inhibited':
      return by.length > 0 ? `inhibited by ${by.map((k) => parseAlertKey(k).rule).join(', ')}` : 'inhibited';
  }
}

/** A value with the unit its rule kind implies: `12%`, `-110 dBm`, `20m` (stale age in seconds). */
export function valueText(kind: string, value: AlertValue): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'number') {
    if (kind === 'low_battery') return `${value}%`;
    if (kind === 'weak_signal') return `${value} dBm`;
    if (kind === 'stale') return formatDuration(value * 1000);
  }
  return terminalSafe(String(value));
}

const boxText = (serial: string): string => (isFleetKey(serial) ? `(${terminalSafe(fleetLabel(serial))})` : terminalSafe(serial));

/** `ops-mail, ops-slack (pending)`: where the alert's latest notification went, per notifier. */
export function deliveriesText(deliveries: AlertView['deliveries']): string {
  return deliveries.map((d) => (d.status === 'delivered' ? d.notifier : `${d.notifier} (${d.status})`)).join(', ');
}

/** Prints the alert list (and, with `showTransitions`, the transitions) as a table or JSON. */
export function printAlerts(ctx: CliContext, views: readonly AlertView[], options: { format: OutputFormat; now: number; from: number; showTransitions: boolean; active: boolean }): void {
  const { now } = options;
  if (options.format === 'json') {
    ctx.out(JSON.stringify({ now: isoTime(now), since: isoTime(options.from), alerts: views.map(alertJson) }, null, 2) + '\n');
    return;
  }
  if (views.length === 0) {
    ctx.out(options.active ? 'no active alerts\n' : `no alerts since ${formatTime(options.from)}\n`);
    return;
  }
  ctx.out(
    formatTable(
      ['STATE', 'RULE', 'SEVERITY', 'BOX', 'NAME', 'SINCE', 'VALUE', 'SUMMARY', 'HELD BACK', 'ACKED', 'NOTIFIED'],
      views.map((v) => [
        v.state,
        v.rule,
        v.severity,
        boxText(v.serial),
        v.name === null ? '' : terminalSafe(v.name),
        relativeTime(v.since, now),
        valueText(v.kind, v.value),
        terminalSafe(v.summary ?? ''),
        heldBackText(v.heldBack?.reason ?? null, v.heldBack?.by ?? []),
        v.ack === null ? '' : `${terminalSafe(v.ack.by)}${v.ack.until === null ? '' : ` (until ${formatTime(v.ack.until)})`}: ${terminalSafe(v.ack.comment)}`,
        deliveriesText(v.deliveries),
      ]),
    ),
  );
  if (!options.showTransitions) return;
  const rows = views
    .flatMap((v) => v.transitions.map((t) => ({ t, kind: v.kind })))
    .sort((a, b) => a.t.at - b.t.at || a.t.id - b.t.id)
    .map(({ t, kind }) => [
      formatTime(t.at),
      t.rule,
      boxText(t.serial),
      `${t.from} -> ${t.to}`,
      valueText(kind, t.value),
      terminalSafe(t.summary ?? ''),
      heldBackText(t.heldBack, t.heldBy),
    ]);
  ctx.out(`\ntransitions since ${formatTime(options.from)}:\n`);
  ctx.out(rows.length === 0 ? '(none)\n' : formatTable(['TIME', 'RULE', 'BOX', 'CHANGE', 'VALUE', 'SUMMARY', 'HELD BACK'], rows));
}

export const registerAlerts: RegisterCommand = (program: Command, ctx: CliContext) => {
  program
    .command('alerts')
    .description('current and past alerts with their transitions')
    .option('--active', 'only alerts pending or firing now')
    .option('--since <duration>', 'how far back to look for past alerts and transitions, e.g. 24h (default 7d; given explicitly, the table lists the transitions too)')
    .addOption(formatOption(['table', 'json']))
    .option('-c, --config <file>', 'configuration file')
    .addOption(dbOption())
    .action((opts: AlertsOptions) =>
      withStore(opts, ctx, async (store, now, { alerts, config }) => {
        const { from } = parseRange({ since: opts.since }, now, '7d');
        const views = await readAlertViews(alertViewSource(store, alerts, store.acks), config, { from, activeOnly: opts.active === true }, now);
        printAlerts(ctx, views, { format: opts.format, now, from, showTransitions: opts.since !== undefined, active: opts.active === true });
      }),
    );
};
