/**
 * `boxwatch status`: one line per box, the boxes in trouble first: boxes with firing alerts, then
 * by condition. The ALERTS column lists each box's open alerts (`box-offline!` firing, `battery-low`
 * pending); gateway alerts follow the table.
 */
import type { Command } from 'commander';
import type { AlertState } from '../alerts/types.js';
import type { AlertQueries } from '../alerts/repositories.js';
import type { Config } from '../config/index.js';
import { SqliteStore } from '../store/index.js';
import type { Store } from '../store/types.js';
import { relativeTime } from '../time-format.js';
import { boxViewJson, boxViews, openAlertsBySerial, staleAfterMs } from '../views/boxes.js';
import { terminalSafe } from './call-gateway.js';
import type { CliContext, RegisterCommand } from './context.js';
import { formatOption, printRows, type OutputFormat } from './output.js';
import { dbOption, withStore } from './store-access.js';

/** `box-offline!, battery-low`: `!` marks a firing alert, no mark a pending one. */
export function alertsCell(alerts: readonly Pick<AlertState, 'rule' | 'status'>[]): string {
  return alerts.map((a) => `${a.rule}${a.status === 'firing' ? '!' : ''}`).join(', ');
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
  const states = [...(source?.states().values() ?? [])];
  const views = boxViews(store.boxes(), states, now, staleAfterMs(config));
  printRows(ctx, format, {
    headers: ['SERIAL', 'NAME', 'CONNECTED', 'BATTERY', 'SIGNAL', 'LAST SEEN', 'FIRMWARE', 'ALERTS', 'STATE'],
    rows: views.map(({ box: b, state, alerts: open }) => [
      terminalSafe(b.serial),
      terminalSafe(b.name),
      state === 'missing' ? 'missing' : b.connected ? 'yes' : 'no',
      b.battery === null ? '-' : `${b.battery}%`,
      b.signal === null ? '-' : `${b.signal} dBm`,
      relativeTime(b.lastSeen, now),
      terminalSafe(b.firmware),
      alertsCell(open),
      b.missingSince !== null ? `missing since ${relativeTime(b.missingSince, now)}` : state,
    ]),
    json: views.map(boxViewJson),
    empty: 'no boxes yet: run `boxwatch run` (or `boxwatch demo`) to poll the gateway',
  });
  const gateway = openAlertsBySerial(states).get('');
  if (format === 'table' && gateway !== undefined) {
    ctx.out(`\ngateway alerts: ${gateway.map((a) => `${a.rule}${a.status === 'firing' ? '!' : ''} (${terminalSafe(a.summary ?? a.status)}, since ${relativeTime(a.since, now)})`).join(', ')}\n`);
  }
}
