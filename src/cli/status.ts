/**
 * `boxwatch status`: one line per box, the boxes in trouble first: boxes with firing alerts, then
 * by condition. The ALERTS column lists each box's open alerts (`box-offline!` firing, `battery-low`
 * pending, `box-offline! (acked by alice)` acknowledged); gateway alerts follow the table.
 */
import type { Command } from 'commander';
import { withAcks, type Ack } from '../alerts/acks.js';
import type { AlertState } from '../alerts/types.js';
import type { AlertQueries } from '../alerts/repositories.js';
import type { Config } from '../config/index.js';
import { SqliteStore } from '../store/index.js';
import type { Store } from '../store/types.js';
import { relativeTime } from '../time-format.js';
import { boxViewJson, boxViews, openAlertsBySerial, staleAfterMs } from '../views/boxes.js';
import { terminalSafe } from './call-gateway.js';
import { DAY_MS, type FailureCount } from '../store/calls-repo.js';
import { failureCell } from '../views/calls.js';
import type { CliContext, RegisterCommand } from './context.js';
import { formatOption, printRows, type OutputFormat } from './output.js';
import { dbOption, withStore } from './store-access.js';

/**
 * Each box's final calls of the last 24 hours and the failed among them (none from a database
 * without calls; a database from before calls has no calls table).
 */
function callsOfLastDay(store: Store, now: number): ReadonlyMap<string, FailureCount> {
  if (!(store instanceof SqliteStore)) return new Map();
  try {
    return store.calls.failureCounts({ since: now - DAY_MS });
  } catch {
    return new Map();
  }
}

/** `box-offline! (acked by alice), battery-low`: `!` marks a firing alert, no mark a pending one. */
export function alertsCell(alerts: readonly (Pick<AlertState, 'rule' | 'status'> & { ack?: Ack | null })[]): string {
  return alerts.map((a) => `${a.rule}${a.status === 'firing' ? '!' : ''}${a.ack ? ` (acked by ${terminalSafe(a.ack.by)})` : ''}`).join(', ');
}

export const registerStatus: RegisterCommand = (program: Command, ctx: CliContext) => {
  program
    .command('status')
    .description('one line per box, the boxes in trouble first')
    .option('-c, --config <file>', 'configuration file')
    .addOption(dbOption())
    .addOption(formatOption(['table', 'json']))
    .action((opts: { config?: string; format: OutputFormat }) =>
      withStore(opts, ctx, (store, now, { alerts, config }) => printStatus(ctx, store, now, opts.format, alerts, config)),
    );
};

/**
 * The status table (or JSON: the box views, src/views/boxes.ts) of every box the store knows; also
 * printed at the end of the demo. Open alerts come from `alerts`, or from the store's database when
 * it is a SqliteStore. A box gone from the device list says `missing` under CONNECTED.
 */
export function printStatus(ctx: CliContext, store: Store, now: number, format: OutputFormat, alerts?: Pick<AlertQueries, 'states'>, config: Pick<Config, 'rules'> | null = null): void {
  const source = alerts ?? (store instanceof SqliteStore ? store.alerts : undefined);
  const acks = store instanceof SqliteStore ? store.acks.latestByKey() : new Map<string, Ack>();
  const states = withAcks(source?.states().values() ?? [], acks, now);
  const views = boxViews(store.boxes(), states, now, staleAfterMs(config));
  const calls = callsOfLastDay(store, now);
  printRows(ctx, format, {
    headers: ['SERIAL', 'NAME', 'CONNECTED', 'BATTERY', 'SIGNAL', 'LAST SEEN', 'FIRMWARE', 'CALLS FAILED', 'ALERTS', 'STATE'],
    rows: views.map(({ box: b, state, alerts: open }) => [
      terminalSafe(b.serial),
      terminalSafe(b.name),
      state === 'missing' ? 'missing' : b.connected ? 'yes' : 'no',
      b.battery === null ? '-' : `${b.battery}%`,
      b.signal === null ? '-' : `${b.signal} dBm`,
      relativeTime(b.lastSeen, now),
      terminalSafe(b.firmware),
      failureCell(calls.get(b.serial)),
      alertsCell(open),
      b.missingSince !== null ? `missing since ${relativeTime(b.missingSince, now)}` : state,
    ]),
    json: views.map((v) => ({ ...boxViewJson(v), calls24h: calls.get(v.box.serial) ?? null })),
    empty: 'no boxes yet: run `boxwatch run` (or `boxwatch demo`) to poll the gateway',
  });
  const gateway = openAlertsBySerial(states).get('');
  if (format === 'table' && gateway !== undefined) {
    ctx.out(`\ngateway alerts: ${gateway.map((a) => `${alertsCell([a])} (${terminalSafe(a.summary ?? a.status)}, since ${relativeTime(a.since, now)})`).join(', ')}\n`);
  }
}
