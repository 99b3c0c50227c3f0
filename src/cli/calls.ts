/**
 * `boxwatch calls list` and `boxwatch calls show ID`: read call records from the gateway.
 *
 * The vendor has no server-side filters and does not document the order, so `list` filters on
 * this side, page by page (`page` from 1), and sorts by start time, newest first. Without `--all`
 * it stops once `--limit` calls (default 20) matched or after 10 pages, and says so on stderr
 * when more may exist; `--all` reads every page and shows every match.
 *
 * With `gateways:` both read one account's gateway, with its key: `--account NAME` (or, for
 * `show`, a call id written `ACCOUNT/ID` as the database and the API show it); several accounts and
 * none named is exit 2 naming them.
 */
import { UsageError } from '../errors.js';
import type { CallSummary } from '../gateway/schemas.js';
import type { GatewayClient } from '../gateway/types.js';
import { tryParseDuration, formatDuration } from '../duration.js';
import { readTime, TIME_HELP } from '../time.js';
import { clockOf, type CliContext, type RegisterCommand } from './context.js';
import { accountOption, accountPart, boxSerial, configOption, formatTimestamp, gatewayOption, positiveInt, terminalSafe, withAccountGateway } from './call-gateway.js';
import { formatOption, formatTable, type OutputFormat } from './output.js';
import { registerCallStats } from './calls-stats.js';

/** Pages read without --all before stopping. */
export const MAX_PAGES_WITHOUT_ALL = 10;
const DEFAULT_LIMIT = 20;

interface ListOptions {
  perPage?: string;
  all?: boolean;
  limit?: string;
  status?: string;
  agent?: string;
  box?: string;
  since?: string;
  account?: string;
  gateway?: string;
  config?: string;
  format: OutputFormat;
}

interface ShowOptions {
  account?: string;
  gateway?: string;
  config?: string;
  format: OutputFormat;
}

export const registerCalls: RegisterCommand = (program, ctx) => {
  const calls = program.command('calls').description('read call records from the gateway');
  calls
    .command('list')
    .description('list calls, newest first, filtered on this side (the gateway has no filters)')
    .option('--per-page <n>', 'records per gateway page (the gateway decides when omitted)')
    .option('--all', 'read every page and show every matching call')
    .option('--limit <n>', `show at most N matching calls without --all (default ${DEFAULT_LIMIT})`)
    .option('--status <status>', 'only calls with this status (initiated, completed, failed, ...)')
    .option('--agent <id>', 'only calls handled by this agent')
    .option('--box <serial>', 'only calls placed from this box (SERIAL, box:SERIAL or ACCOUNT/SERIAL)')
    .option('--since <when>', `only calls started within this duration (24h, 7d) or since this time (${TIME_HELP})`)
    .addOption(accountOption())
    .addOption(gatewayOption())
    .addOption(configOption())
    .addOption(formatOption(['table', 'json']))
    .action((opts: ListOptions) => runList(opts, ctx));
  calls
    .command('show')
    .description('show one call: status, times, duration, recording, transcript, variables')
    .argument('<id>', 'call id (ACCOUNT/ID names the account too)')
    .addOption(accountOption())
    .addOption(gatewayOption())
    .addOption(configOption())
    .addOption(formatOption(['table', 'json']))
    .action((id: string, opts: ShowOptions) => runShow(id, opts, ctx));
  registerCallStats(calls, ctx);
};

interface ListQuery {
  perPage?: number;
  /** Undefined with --all. */
  limit?: number;
  match: (call: CallSummary) => boolean;
}

/** Validates the list options (UsageError on a bad one) into a query. */
function parseListOptions(opts: ListOptions, now: number): ListQuery {
  const tests: ((c: CallSummary) => boolean)[] = [];
  if (opts.status !== undefined) {
    if (opts.status.trim() === '') throw new UsageError('--status must not be empty');
    const status = opts.status.trim().toLowerCase();
    tests.push((c) => c.status.toLowerCase() === status);
  }
  if (opts.agent !== undefined) {
    const agent = positiveInt(opts.agent, '--agent');
    tests.push((c) => c.agent_id === agent);
  }
  if (opts.box !== undefined) {
    const serial = boxSerial(accountPart(opts.box).rest);
    if (serial === undefined) throw new UsageError(`--box must be a box serial such as SN-0001 (or ACCOUNT/SERIAL), got "${terminalSafe(opts.box)}"`);
    tests.push((c) => c.from === `box:${serial}`);
  }
  if (opts.since !== undefined) {
    const cutoff = parseSince(opts.since, now);
    tests.push((c) => Date.parse(c.started_at) >= cutoff);
  }
  if (opts.all && opts.limit !== undefined) throw new UsageError('--limit and --all cannot be combined');
  return {
    ...(opts.perPage === undefined ? {} : { perPage: positiveInt(opts.perPage, '--per-page') }),
    ...(opts.all ? {} : { limit: opts.limit === undefined ? DEFAULT_LIMIT : positiveInt(opts.limit, '--limit') }),
    match: (c) => tests.every((t) => t(c)),
  };
}

/** `24h` -> now - 24h; an ISO timestamp -> that time. */
function parseSince(text: string, now: number): number {
  const ms = tryParseDuration(text);
  if (ms !== undefined) return now - ms;
  const time = readTime(text);
  if (time.ok) return time.ms;
  throw new UsageError(`--since must be a duration (30m, 24h, 7d) or a time: ${time.message}`);
}

interface Collected {
  calls: CallSummary[];
  /** Why more matching calls may exist, if they may. */
  truncated?: string;
}

/** Reads pages from 1 until the query is satisfied or the gateway has no further page. */
async function collect(client: GatewayClient, query: ListQuery, signal: AbortSignal): Promise<Collected> {
  const found: CallSummary[] = [];
  const perPage = query.perPage === undefined ? {} : { perPage: query.perPage };
  for (let page = 1; ; page += 1) {
    const { items, meta } = await client.listCalls({ ...perPage, page }, { signal });
    found.push(...items.filter(query.match));
    if (meta.page !== page) {
      return { calls: found, truncated: `the gateway answered page ${meta.page} when asked for page ${page}; stopped paging` };
    }
    if (!meta.has_next || items.length === 0) return { calls: found };
    if (query.limit !== undefined && found.length >= query.limit) {
      return { calls: found, truncated: `showing the first ${query.limit} matching calls` };
    }
    if (query.limit !== undefined && page >= MAX_PAGES_WITHOUT_ALL) {
      return { calls: found, truncated: `read ${page} pages` };
    }
  }
}

async function runList(opts: ListOptions, ctx: CliContext): Promise<void> {
  const query = parseListOptions(opts, clockOf(ctx).now());
  const collected = await withAccountGateway(opts, ctx.env, opts.box, (client) => collect(client, query, ctx.signal));
  const calls = collected.calls
    .slice()
    .sort((a, b) => Date.parse(b.started_at) - Date.parse(a.started_at))
    .slice(0, query.limit ?? Infinity);
  if (opts.format === 'json') ctx.out(JSON.stringify(calls, null, 2) + '\n');
  else if (calls.length === 0) ctx.out('no matching calls\n');
  else {
    ctx.out(
      formatTable(
        ['CALL ID', 'STATUS', 'STARTED', 'DURATION', 'AGENT', 'FROM', 'TO'],
        calls.map((c) =>
          [
            c.call_id,
            c.status,
            formatTimestamp(c.started_at),
            durationText(c.duration_sec),
            String(c.agent_id),
            c.from,
            c.to,
          ].map(terminalSafe),
        ),
      ),
    );
  }
  if (collected.truncated !== undefined) ctx.err(`note: ${collected.truncated}; more calls may match (use --all)\n`);
}

async function runShow(id: string, opts: ShowOptions, ctx: CliContext): Promise<void> {
  const given = accountPart(id);
  if (!/^\d+$/.test(given.rest)) throw new UsageError(`call id must be an integer or ACCOUNT/INTEGER, got "${terminalSafe(id)}"`);
  const call = await withAccountGateway(opts, ctx.env, id, (client) => client.getCall(given.rest, { signal: ctx.signal }));
  if (opts.format === 'json') {
    ctx.out(JSON.stringify(call, null, 2) + '\n');
    return;
  }
  const rows: [string, string][] = [
    ['call_id', call.call_id],
    ['status', call.status],
    ['direction', call.direction],
    ['agent_id', String(call.agent_id)],
    ['from', call.from],
    ['to', call.to],
    ['started_at', formatTimestamp(call.started_at)],
    ['ended_at', formatTimestamp(call.ended_at)],
    ['duration', durationText(call.duration_sec)],
    ['recording', call.audio_record_url ?? '-'],
  ];
  for (const [key, value] of Object.entries(call.variables ?? {})) rows.push([`variables.${key}`, value]);
  if (call.transcript === undefined) rows.push(['transcript', '-']);
  ctx.out(formatTable(['FIELD', 'VALUE'], rows.map(([k, v]) => [terminalSafe(k), terminalSafe(v)])));
  if (call.transcript !== undefined) ctx.out(`\ntranscript:\n${transcriptLines(call.transcript)}`);
}

/**
 * The transcript as it reads: its line breaks are line breaks (indented two spaces); any other
 * control character (an escape sequence, a carriage return) is shown escaped, never sent to the
 * terminal.
 */
export function transcriptLines(text: string): string {
  return text
    .split(/\r?\n/)
    .map((line) => `  ${terminalSafe(line)}\n`)
    .join('');
}

function durationText(seconds: number | undefined): string {
  if (seconds === undefined) return '-';
  return seconds === 0 ? '0s' : formatDuration(seconds * 1000);
}
