/**
 * `boxwatch calls stats [--by box|agent] [--since 24h]`: from the database (not the gateway),
 * per box or agent: calls placed, completed, failed and the failed share of the final calls,
 * stuck (initiated longer than calls.stuck_after), median duration of the completed calls, and
 * recordings archived and lost. Times on the database's clock (a demo database's own).
 *
 * Agent ids are each vendor account's own: `--by agent` counts every account's agents apart, with
 * an ACCOUNT column when the rows are of several accounts (as `status` shows boxes).
 */
import type { Command } from 'commander';
import { Option } from 'commander';
import { formatDuration } from '../duration.js';
import { UsageError } from '../errors.js';
import { callStatsJson } from '../views/calls.js';
import { terminalSafe } from './call-gateway.js';
import type { CliContext } from './context.js';
import { formatOption, printRows, type OutputFormat } from './output.js';
import { dbOption, withStore } from './store-access.js';
import { parseRange } from './time-range.js';
import { isoTime } from '../time-format.js';

/** A call `initiated` this long counts as stuck without a configuration (calls.stuck_after's default). */
const DEFAULT_STUCK_AFTER_MS = 3_600_000;

interface StatsOptions {
  by: string;
  since?: string;
  config?: string;
  db?: string;
  format: OutputFormat;
}

export function registerCallStats(calls: Command, ctx: CliContext): void {
  calls
    .command('stats')
    .description('call figures from the database: placed, completed, failed %, stuck, median duration, recordings')
    .addOption(new Option('--by <what>', 'one row per box or per agent').default('box'))
    .option('--since <duration>', 'calls started within this duration (default 24h)')
    .option('-c, --config <file>', 'configuration file')
    .addOption(dbOption())
    .addOption(formatOption(['table', 'json', 'csv']))
    .action((opts: StatsOptions) => runStats(opts, ctx));
}

async function runStats(opts: StatsOptions, ctx: CliContext): Promise<void> {
  if (opts.by !== 'box' && opts.by !== 'agent') throw new UsageError(`--by must be box or agent, not "${opts.by}"`);
  const by = opts.by;
  await withStore(opts, ctx, async (store, now, { config }) => {
    const { from } = parseRange({ since: opts.since }, now, '24h');
    const stuckAfter = config?.calls?.stuckAfter ?? DEFAULT_STUCK_AFTER_MS;
    const rows = await store.calls.stats({ since: from, by, stuckBefore: now - stuckAfter });
    const json = rows.map((r) => callStatsJson(r, by));
    // Several accounts' agents: an ACCOUNT column before AGENT.
    const several = by === 'agent' && new Set(json.map((r) => r.account)).size > 1;
    const total = rows.reduce((t, r) => ({ placed: t.placed + r.placed, completed: t.completed + r.completed, failed: t.failed + r.failed }), { placed: 0, completed: 0, failed: 0 });
    printRows(ctx, opts.format, {
      headers: [...(several ? ['ACCOUNT'] : []), by === 'box' ? 'BOX' : 'AGENT', 'PLACED', 'TEST', 'COMPLETED', 'FAILED', 'FAILED %', 'STUCK', 'MEDIAN', 'ARCHIVED', 'LOST'],
      rows: json.map((r) => [
        ...(several ? [terminalSafe(r.account ?? '')] : []),
        by === 'box' ? terminalSafe(r.box ?? '') : String(r.agent),
        String(r.placed),
        String(r.testCalls),
        String(r.completed),
        String(r.failed),
        r.failedPercent === null ? '-' : `${r.failedPercent}%`,
        String(r.stuck),
        r.medianDurationSec === null ? '-' : formatDuration(r.medianDurationSec * 1000),
        String(r.recordingsArchived),
        String(r.recordingsLost),
      ]),
      json: { since: isoTime(from), by, rows: json, total },
      empty: `no calls since ${isoTime(from)} in the database (calls are read only with a calls: section)`,
    });
  });
}
