/**
 * `boxwatch history SERIAL`: raw points for short ranges, hourly (or coarser) rollups for long
 * ones, at most about 500 points; the table ends with a sparkline.
 */
import { isoTime as iso } from '../time-format.js';
import { Option, type Command } from 'commander';
import { UsageError } from '../errors.js';
import { METRICS, type HistoryResult, type Metric } from '../domain/store.js';
import type { CliContext, RegisterCommand } from './context.js';
import { formatOption, printRows, type OutputFormat } from './output.js';
import { sparkline } from './sparkline.js';
import { historyResultJson } from '../views/history.js';
import { boxIdArgument, dbOption, withStore } from './store-access.js';
import { parseRange, type RangeOptions } from './time-range.js';
import { TIME_HELP } from '../time.js';

interface HistoryOptions extends RangeOptions {
  config?: string;
  db?: string;
  metric: string;
  format: OutputFormat;
}

const show = (v: number | string | null): string => (v === null ? '-' : typeof v === 'number' ? String(Math.round(v * 100) / 100) : v);

export function historyRows(h: HistoryResult): { headers: string[]; rows: string[][]; numbers: (number | null)[] } {
  if (h.kind === 'raw') {
    return {
      headers: ['TIME', h.metric.toUpperCase()],
      rows: h.points.map((p) => [iso(p.t), show(p.value)]),
      numbers: h.points.map((p) => (typeof p.value === 'number' ? p.value : null)),
    };
  }
  return {
    headers: ['BUCKET START', 'MIN', 'MEAN', 'MAX', 'SAMPLES'],
    rows: h.points.map((p) => [iso(p.t), show(p.min), show(p.mean), show(p.max), String(p.count)]),
    numbers: h.points.map((p) => p.mean),
  };
}

export const registerHistory: RegisterCommand = (program: Command, ctx: CliContext) => {
  program
    .command('history')
    .description('the history of one metric of one box')
    .argument('<serial>', 'box serial, e.g. SN-0042 (ACCOUNT/SERIAL when several accounts have it)')
    .option('--since <duration>', 'how far back, e.g. 24h, 7d (default 24h)')
    .option('--from <time>', `start of the range (${TIME_HELP})`)
    .option('--to <time>', 'end of the range (same form; default now)')
    .addOption(new Option('-m, --metric <metric>', 'battery, signal, connected or firmware').default('battery'))
    .addOption(formatOption(['table', 'json', 'csv']))
    .option('-c, --config <file>', 'configuration file')
    .addOption(dbOption())
    .action((input: string, opts: HistoryOptions) =>
      withStore(opts, ctx, async (store, now) => {
        if (!METRICS.includes(opts.metric as Metric)) {
          throw new UsageError(`unknown metric "${opts.metric}" (use ${METRICS.join(', ')})`);
        }
        const { from, to } = parseRange(opts, now, '24h');
        const serial = await boxIdArgument(store, input);
        const box = serial === undefined ? undefined : await store.box(serial);
        if (serial === undefined || !box) throw new UsageError(`unknown box serial "${input}" (see \`boxwatch status\`)`);
        const h = await store.history(serial, opts.metric as Metric, from, to);
        const { headers, rows, numbers } = historyRows(h);
        printRows(ctx, opts.format, { headers, rows, json: historyResultJson(serial, box.name, h), empty: `no ${h.metric} data for ${serial} in that range` });
        if (opts.format === 'table' && rows.length > 0) {
          const granularity = h.kind === 'raw' ? 'raw samples' : `${Math.round(h.bucketMs / 3_600_000)}h rollups`;
          ctx.out(`\n${sparkline(numbers)}  ${serial} ${h.metric}, ${iso(from)} .. ${iso(to)}, ${rows.length} ${rows.length === 1 ? 'point' : 'points'} (${granularity})\n`);
        }
      }),
    );
};
