/**
 * `boxwatch export`: stored history as CSV, JSON lines or OpenMetrics (src/export/export.ts), to
 * stdout or a file. A file is written under a temporary name and renamed when complete, so an
 * interrupted export never leaves a truncated file behind. On a terminal, progress goes to stderr.
 */
import { createWriteStream, renameSync, rmSync } from 'node:fs';
import { finished } from 'node:stream/promises';
import type { Command } from 'commander';
import { Option } from 'commander';
import { EXPORT_FORMATS, parseMetric, storedSpan, type ExportFormat, type Span } from '../export/points.js';
import { callbackSink, streamSink } from '../export/sink.js';
import type { SqliteStore } from '../store/index.js';
import { METRICS, type Metric } from '../domain/store.js';
import { UsageError } from '../errors.js';
import { globProblem } from '../glob.js';
import { clockOf, type CliContext, type RegisterCommand } from './context.js';
import { dbOption, withSqliteStore } from './store-access.js';
import { parseRange, type RangeOptions } from './time-range.js';

interface ExportOptions extends RangeOptions {
  config?: string;
  db?: string;
  boxes: string;
  metric?: string[];
  format: ExportFormat;
  out?: string;
}

/** The range asked for (--since, --from/--to; default everything), within what is stored. */
function exportSpan(opts: RangeOptions, now: number, stored: Span | null): Span {
  if (stored === null) return { from: 0, to: 0 };
  const asked = opts.since === undefined && opts.from === undefined && opts.to === undefined ? stored : parseRange(opts, now, '24h');
  return { from: Math.max(asked.from, stored.from), to: Math.min(asked.to, stored.to) };
}

function progressLine(ctx: CliContext): ((done: number, total: number) => void) | undefined {
  if (!ctx.errIsTTY) return undefined;
  let shown = 0;
  return (done, total) => {
    const now = clockOf(ctx).now();
    if (done < total && now - shown < 200) return;
    shown = now;
    ctx.err(`\rexporting: ${done}/${total} boxes (${Math.floor((100 * done) / Math.max(1, total))}%)${done === total ? '\n' : ''}`);
  };
}

async function run(store: SqliteStore, now: number, opts: ExportOptions, ctx: CliContext): Promise<void> {
  const problem = globProblem(opts.boxes);
  if (problem !== undefined) throw new UsageError(`--boxes: ${problem}`);
  const metrics: Metric[] = opts.metric === undefined ? [...METRICS] : [...new Set(opts.metric.flatMap((m) => m.split(',')).map((m) => parseMetric(m.trim(), '--metric')))];
  const request = { span: exportSpan(opts, now, storedSpan(store)), boxes: opts.boxes, metrics, format: opts.format };
  const options = { signal: ctx.signal, onProgress: progressLine(ctx) };
  const { exportHistory } = await import('../export/export.js'); // loaded when used, not by every command (`run`)
  if (opts.out === undefined) {
    await exportHistory(store, request, ctx.outStream ? streamSink(ctx.outStream) : callbackSink(ctx.out), options);
    return;
  }
  const partial = `${opts.out}.partial`;
  const file = createWriteStream(partial);
  try {
    await exportHistory(store, request, streamSink(file), options);
    file.end();
    await finished(file);
    renameSync(partial, opts.out);
  } catch (err) {
    file.destroy();
    rmSync(partial, { force: true });
    throw err;
  }
}

/** What to do instead on PostgreSQL (export reads a SQLite file). */
const POSTGRES_INSTEAD = "copy it to a SQLite file with `boxwatch migrate --from postgres://... --to sqlite:FILE` and pass --db FILE, or read PostgreSQL's tables with psql";

export const registerExport: RegisterCommand = (program: Command, ctx: CliContext) => {
  program
    .command('export')
    .description('stream the stored history as CSV, JSON lines or OpenMetrics (for promtool tsdb create-blocks-from openmetrics)')
    .addOption(new Option('-f, --format <format>', 'csv, jsonl or openmetrics').choices([...EXPORT_FORMATS]).makeOptionMandatory())
    .option('--since <duration>', 'how far back, e.g. 7d (default: everything stored)')
    .option('--from <iso>', 'start of the range (ISO 8601)')
    .option('--to <iso>', 'end of the range (ISO 8601, default now)')
    .addOption(new Option('--boxes <glob>', 'only the boxes whose serial matches, e.g. "BX-00*"').default('*'))
    .addOption(new Option('-m, --metric <metric...>', `only these metrics (${METRICS.join(', ')}); default all`))
    .option('-o, --out <file>', 'write to this file instead of stdout')
    .option('-c, --config <file>', 'configuration file')
    .addOption(dbOption())
    .action((opts: ExportOptions) =>
      withSqliteStore('export', opts, ctx, POSTGRES_INSTEAD, (store, now) => run(store, now, opts, ctx)),
    );
};
