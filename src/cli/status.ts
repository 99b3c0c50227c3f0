/** `boxwatch status`: one line per box, the boxes in trouble first. */
import type { Command } from 'commander';
import type { BoxState, Store } from '../store/types.js';
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

export function sortByTrouble(boxes: BoxState[]): BoxState[] {
  return [...boxes].sort((a, b) => troubleRank(a) - troubleRank(b) || (a.battery ?? 101) - (b.battery ?? 101) || a.serial.localeCompare(b.serial));
}

export const registerStatus: RegisterCommand = (program: Command, ctx: CliContext) => {
  program
    .command('status')
    .description('one line per box, the boxes in trouble first')
    .option('-c, --config <file>', 'configuration file')
    .addOption(dbOption())
    .addOption(formatOption(['table', 'json']))
    .action((opts: { config?: string; format: OutputFormat }) =>
      withStore(opts, ctx, (store, now) => printStatus(ctx, store, now, opts.format)),
    );
};

/** The status table (or JSON) of every box the store knows; also printed at the end of the demo. */
export function printStatus(ctx: CliContext, store: Store, now: number, format: OutputFormat): void {
  const boxes = sortByTrouble(store.boxes());
  printRows(ctx, format, {
    headers: ['SERIAL', 'NAME', 'CONNECTED', 'BATTERY', 'SIGNAL', 'LAST SEEN', 'FIRMWARE', 'STATE'],
    rows: boxes.map((b) => [
      b.serial,
      b.name,
      b.connected ? 'yes' : 'no',
      b.battery === null ? '-' : `${b.battery}%`,
      b.signal === null ? '-' : `${b.signal} dBm`,
      relativeTime(b.lastSeen, now),
      b.firmware,
      b.missingSince !== null ? `missing since ${relativeTime(b.missingSince, now)}` : '',
    ]),
    json: boxes.map((b) => ({ ...b, lastSeen: new Date(b.lastSeen).toISOString() })),
    empty: 'no boxes yet: run `boxwatch run` (or `boxwatch demo`) to poll the gateway',
  });
}
