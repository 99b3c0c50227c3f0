/** `boxwatch uptime`: connected fraction of observed time per box. */
import type { Command } from 'commander';
import type { CliContext, RegisterCommand } from './context.js';
import { formatOption, printRows, type OutputFormat } from './output.js';
import { dbOption, withStore } from './store-access.js';
import { parseRange } from './time-range.js';
import { formatDuration } from '../duration.js';

export const registerUptime: RegisterCommand = (program: Command, ctx: CliContext) => {
  program
    .command('uptime')
    .description('connected fraction per box over a range')
    .option('--since <duration>', 'how far back, e.g. 30d', '30d')
    .addOption(formatOption(['table', 'json']))
    .option('-c, --config <file>', 'configuration file')
    .addOption(dbOption())
    .action((opts: { since: string; format: OutputFormat; config?: string; db?: string }) =>
      withStore(opts, ctx, async (store, now) => {
        const { from, to } = parseRange({ since: opts.since }, now, '30d');
        const rows = (await store.uptime(from, to)).sort((a, b) => (a.connectedFraction ?? -1) - (b.connectedFraction ?? -1) || a.serial.localeCompare(b.serial));
        printRows(ctx, opts.format, {
          headers: ['SERIAL', 'NAME', 'UPTIME', 'OBSERVED'],
          rows: rows.map((r) => [
            r.serial,
            r.name,
            r.connectedFraction === null ? '-' : `${(r.connectedFraction * 100).toFixed(2)}%`,
            formatDuration(r.observedMs),
          ]),
          json: rows,
          empty: 'no boxes observed in that range',
        });
      }),
    );
};
