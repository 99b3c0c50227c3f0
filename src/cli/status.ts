/**
 * `boxwatch status`: one line per box, the boxes in trouble first: boxes with firing alerts, then
 * by condition. The ALERTS column lists each box's open alerts (`box-offline!` firing, `battery-low`
 * pending); gateway alerts follow the table.
 */
import type { Command } from 'commander';
import { SEVERITY_RANK, type AlertState } from '../alerts/types.js';
import type { AlertQueries } from '../alerts/repositories.js';
import { SqliteStore } from '../store/index.js';
import type { BoxState, Store } from '../store/types.js';
import { terminalSafe } from './call-gateway.js';
import type { CliContext, RegisterCommand } from './context.js';
import { formatOption, printRows, type OutputFormat } from './output.js';
import { dbOption, withStore } from './store-access.js';
import { relativeTime } from './time-range.js';

/** Lower is worse: missing, disconnected, no battery reading, low battery, weak signal, fine. */
export function troubleRank(box: BoxState): number {
  if (box.missingSince !== null) return 0;
  if (!box.connected) return 1;
  if (box.battery !== null && box.battery < 20) return 2;
  if (box.signal !== null && box.signal < -105) return 3;
  return 4;
}

/** Open (pending or firing) alerts by box serial ('' = gateway alerts), firing and most severe first. */
export function openAlertsBySerial(states: Iterable<AlertState>): Map<string, AlertState[]> {
  const map = new Map<string, AlertState[]>();
  for (const s of states) {
    if (s.status !== 'firing' && s.status !== 'pending') continue;
    const list = map.get(s.serial);
    if (list) list.push(s);
    else map.set(s.serial, [s]);
  }
  for (const list of map.values()) {
    list.sort((a, b) => Number(b.status === 'firing') - Number(a.status === 'firing') || SEVERITY_RANK[b.severity] - SEVERITY_RANK[a.severity] || a.rule.localeCompare(b.rule));
  }
  return map;
}

/** The most severe firing alert of a box (0 when none): boxes with firing alerts sort first. */
function firingRank(alerts: readonly AlertState[] | undefined): number {
  return Math.max(0, ...(alerts ?? []).filter((a) => a.status === 'firing').map((a) => SEVERITY_RANK[a.severity]));
}

export function sortByTrouble(boxes: BoxState[], alerts: ReadonlyMap<string, AlertState[]> = new Map()): BoxState[] {
  return [...boxes].sort(
    (a, b) =>
      firingRank(alerts.get(b.serial)) - firingRank(alerts.get(a.serial)) ||
      troubleRank(a) - troubleRank(b) ||
      (a.battery ?? 101) - (b.battery ?? 101) ||
      a.serial.localeCompare(b.serial),
  );
}

/** `box-offline!, battery-low`: `!` marks a firing alert, no mark a pending one. */
export function alertsCell(alerts: readonly AlertState[] | undefined): string {
  return (alerts ?? []).map((a) => `${a.rule}${a.status === 'firing' ? '!' : ''}`).join(', ');
}

export const registerStatus: RegisterCommand = (program: Command, ctx: CliContext) => {
  program
    .command('status')
    .description('one line per box, the boxes in trouble first')
    .option('-c, --config <file>', 'configuration file')
    .addOption(dbOption())
    .addOption(formatOption(['table', 'json']))
    .action((opts: { config?: string; format: OutputFormat }) =>
      withStore(opts, ctx, (store, now, { alerts }) => printStatus(ctx, store, now, opts.format, alerts)),
    );
};

/**
 * The status table (or JSON) of every box the store knows; also printed at the end of the demo.
 * Open alerts come from `alerts`, or from the store's database when it is a SqliteStore.
 */
export function printStatus(ctx: CliContext, store: Store, now: number, format: OutputFormat, alerts?: Pick<AlertQueries, 'states'>): void {
  const source = alerts ?? (store instanceof SqliteStore ? store.alerts : undefined);
  const open = openAlertsBySerial(source?.states().values() ?? []);
  const boxes = sortByTrouble(store.boxes(), open);
  printRows(ctx, format, {
    headers: ['SERIAL', 'NAME', 'CONNECTED', 'BATTERY', 'SIGNAL', 'LAST SEEN', 'FIRMWARE', 'ALERTS', 'STATE'],
    rows: boxes.map((b) => [
      terminalSafe(b.serial),
      terminalSafe(b.name),
      b.connected ? 'yes' : 'no',
      b.battery === null ? '-' : `${b.battery}%`,
      b.signal === null ? '-' : `${b.signal} dBm`,
      relativeTime(b.lastSeen, now),
      terminalSafe(b.firmware),
      alertsCell(open.get(b.serial)),
      b.missingSince !== null ? `missing since ${relativeTime(b.missingSince, now)}` : '',
    ]),
    json: boxes.map((b) => ({
      ...b,
      lastSeen: new Date(b.lastSeen).toISOString(),
      alerts: (open.get(b.serial) ?? []).map((a) => ({ rule: a.rule, severity: a.severity, status: a.status, since: new Date(a.since).toISOString(), summary: a.summary })),
    })),
    empty: 'no boxes yet: run `boxwatch run` (or `boxwatch demo`) to poll the gateway',
  });
  const gateway = open.get('');
  if (format === 'table' && gateway !== undefined) {
    ctx.out(`\ngateway alerts: ${gateway.map((a) => `${a.rule}${a.status === 'firing' ? '!' : ''} (${a.summary ?? a.status}, since ${relativeTime(a.since, now)})`).join(', ')}\n`);
  }
}
