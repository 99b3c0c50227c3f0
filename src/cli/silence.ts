/**
 * `boxwatch silence add|list|expire`: silences live in SQLite; the daemon reads them at every
 * cycle, so a change takes effect at its next cycle (no restart, no signal).
 *
 * - `add (--box GLOB | --rule NAME)... --for 2h --comment TEXT [--start ISO] [--by NAME]`:
 *   a `--rule` that matches no configured rule (built-ins included) is an error (exit 2): a typo
 *   would silence nothing. A `--box` glob that matches no known box only warns (the box may
 *   appear later).
 * - `list [--all]`: pending and active silences; `--all` adds the expired ones.
 * - `expire ID`: ends the silence now. An unknown id exits 2; a silence that had already ended is
 *   left as it is (exit 0), so that scripts can expire idempotently.
 */
import { boxMatches, isFleetKey } from '../box-id.js';
import { alertId } from '../alerts/types.js';
import type { Command } from 'commander';
import { GATEWAY_RULE_NAMES, openAlertsMatching, silenceMatchesEverything, silenceState, validateSilence, type Silence } from '../alerts/index.js';
import { STORE_SECTIONS, loadConfig, type Config } from '../config/index.js';
import { formatDuration, readDuration } from '../duration.js';
import { readTime, TIME_HELP } from '../time.js';
import { isoTime as iso } from '../time-format.js';
import { UsageError } from '../errors.js';
import { globProblem, matchesAny } from '../glob.js';
import { terminalSafe } from './output.js';
import { clockOf, type CliContext, type RegisterCommand } from './context.js';
import { formatOption, printRows, type OutputFormat } from './output.js';
import { dbOption, withStore } from './store-access.js';
import { relativeTime } from './time-range.js';

interface AddOptions {
  box: string[];
  rule: string[];
  for?: string;
  comment?: string;
  start?: string;
  by?: string;
  config?: string;
  force?: boolean;
}

/** A silence longer than this, or one that matches everything, needs `--force`. */
export const FORCE_SILENCE_OVER_MS = 365 * 86_400_000;

const collect = (value: string, previous: string[]): string[] => [...previous, value];
/** ISO 8601 to the second, for tables. */
const short = (t: number): string => iso(t).replace(/\.\d{3}Z$/, 'Z');

/** `boxes SN-00*, SN-1?? & rules battery-low`. */
export function matchersText(s: Pick<Silence, 'matchers'>): string {
  const parts: string[] = [];
  if (s.matchers.boxes?.length) parts.push(`boxes ${s.matchers.boxes.join(', ')}`);
  if (s.matchers.rules?.length) parts.push(`rules ${s.matchers.rules.join(', ')}`);
  return terminalSafe(parts.join(' & '));
}

/**
 * Checks `silence add` arguments against the configuration and the time; returns the silence to
 * store (without id). Throws UsageError (exit 2) naming the bad argument.
 */
export function silenceFromOptions(opts: AddOptions, config: Config, now: number, env: NodeJS.ProcessEnv): Omit<Silence, 'id'> {
  const boxes = opts.box.map((b) => b.trim());
  const rules = opts.rule.map((r) => r.trim());
  if (boxes.length === 0 && rules.length === 0) throw new UsageError('give at least one --box GLOB or --rule NAME');
  if ([...boxes, ...rules].some((m) => m === '')) throw new UsageError('--box and --rule must not be empty');
  for (const [option, list] of [['--box', boxes], ['--rule', rules]] as const) {
    for (const m of list) {
      const problem = globProblem(m);
      if (problem !== undefined) throw new UsageError(`${option}: ${problem}`);
    }
  }
  if (opts.for === undefined) throw new UsageError('--for is required (how long the silence lasts, e.g. 2h)');
  const forRead = readDuration(opts.for, { min: 1 });
  if (!forRead.ok) throw new UsageError(`--for: ${forRead.message}`);
  const forMs = forRead.ms;
  if (forMs > FORCE_SILENCE_OVER_MS && opts.force !== true) {
    throw new UsageError(`--for ${opts.for} is longer than a year; add --force if you mean it`);
  }
  if (opts.comment === undefined || opts.comment.trim() === '') throw new UsageError('--comment is required (why the alerts are silenced)');
  let startsAt = now;
  if (opts.start !== undefined) {
    const start = readTime(opts.start);
    if (!start.ok) throw new UsageError(`--start: ${start.message}`);
    startsAt = start.ms;
  }
  const endsAt = startsAt + forMs;
  if (endsAt <= now) throw new UsageError(`the silence would have ended already (${iso(endsAt)}); check --start and --for`);
  const known = [...config.rules.map((r) => r.name), ...GATEWAY_RULE_NAMES];
  for (const rule of rules) {
    if (!known.some((name) => matchesAny(name, [rule]))) {
      throw new UsageError(`--rule "${rule}" matches no configured rule (rules: ${known.join(', ')})`);
    }
  }
  const silence: Omit<Silence, 'id'> = {
    matchers: { ...(boxes.length > 0 ? { boxes } : {}), ...(rules.length > 0 ? { rules } : {}) },
    startsAt,
    endsAt,
    comment: opts.comment.trim(),
    createdBy: opts.by ?? env['USER'] ?? env['LOGNAME'] ?? null,
  };
  const problems = validateSilence({ id: '-', ...silence });
  if (problems.length > 0) throw new UsageError(problems.join('; '));
  if (silenceMatchesEverything(silence) && opts.force !== true) {
    throw new UsageError('this silence matches every box and every rule (the gateway alerts too); add --force if you mean it');
  }
  return silence;
}

/** A silence as `silence list --format json` and the HTTP API show it. */
export function silenceJson(s: Silence, now: number): Record<string, unknown> {
  return {
    id: s.id,
    state: silenceState(s, now),
    boxes: s.matchers.boxes ?? [],
    rules: s.matchers.rules ?? [],
    startsAt: iso(s.startsAt),
    endsAt: iso(s.endsAt),
    comment: s.comment,
    createdBy: s.createdBy ?? null,
  };
}

export const registerSilence: RegisterCommand = (program: Command, ctx: CliContext) => {
  const silence = program.command('silence').description('silence alerts by box and/or rule for a while (add, list, expire)');

  silence
    .command('add')
    .description('add a silence; it takes effect at the daemon\'s next cycle')
    .option('--box <glob>', 'box serial glob, e.g. SN-00* (repeatable)', collect, [])
    .option('--rule <name>', 'rule name or glob (repeatable)', collect, [])
    .option('--for <duration>', 'how long, e.g. 2h (required)')
    .option('--comment <text>', 'why (required)')
    .option('--start <time>', `when it starts (${TIME_HELP}; default now)`)
    .option('--force', 'allow a silence longer than a year, or one that matches every box and rule')
    .option('--by <name>', 'who (default $USER)')
    .option('-c, --config <file>', 'configuration file')
    .action((opts: AddOptions) => {
      // Arguments are checked before the database is opened: a bad one exits 2 and writes nothing.
      const { config } = loadConfig({ path: opts.config, env: ctx.env, uses: STORE_SECTIONS });
      const input = silenceFromOptions(opts, config, clockOf(ctx).now(), ctx.env);
      return withStore(
        { loaded: config },
        ctx,
        async (store, now, { alerts }) => {
          const known = (await store.boxes()).map((b) => b.serial);
          for (const glob of input.matchers.boxes ?? []) {
            if (!known.some((serial) => boxMatches(serial, [glob]))) {
              ctx.err(`warning: no known box matches --box "${terminalSafe(glob)}" (the silence still applies to boxes that appear later)\n`);
            }
          }
          const added = await alerts.addSilence(input, now);
          const state = silenceState(added, now);
          ctx.out(
            `added silence ${added.id}: ${matchersText(added)}, ${short(added.startsAt)} .. ${short(added.endsAt)} (${formatDuration(added.endsAt - added.startsAt)}; ${state === 'pending' ? `starts ${relativeTime(added.startsAt, now)}` : 'active now'})\n`,
          );
          const open = openAlertsMatching(added, (await alerts.states()).values());
          if (open.length > 0) {
            ctx.out(`it matches ${open.length} open alert(s): ${open.map((a) => (isFleetKey(a.serial) ? alertId(a.rule, a.serial) : `${a.rule} ${terminalSafe(a.serial)}`)).join(', ')}\n`);
          }
          ctx.out("the daemon applies it at its next cycle\n");
        },
        { write: true },
      );
    });

  silence
    .command('list')
    .description('pending and active silences (--all: expired ones too)')
    .option('--all', 'include expired silences')
    .addOption(formatOption(['table', 'json']))
    .option('-c, --config <file>', 'configuration file')
    .addOption(dbOption())
    .action((opts: { all?: boolean; format: OutputFormat; config?: string; db?: string }) =>
      withStore(opts, ctx, async (_store, now, { alerts }) => {
        const list = await alerts.silences(now, { all: opts.all === true });
        printRows(ctx, opts.format, {
          headers: ['ID', 'STATE', 'MATCHERS', 'STARTS', 'ENDS', 'BY', 'COMMENT'],
          rows: list.map((s) => [
            s.id,
            silenceState(s, now),
            matchersText(s),
            `${short(s.startsAt)} (${relativeTime(s.startsAt, now)})`,
            `${short(s.endsAt)} (${relativeTime(s.endsAt, now)})`,
            terminalSafe(s.createdBy ?? ''),
            terminalSafe(s.comment),
          ]),
          json: list.map((s) => silenceJson(s, now)),
          empty: opts.all ? 'no silences' : 'no active or pending silences (--all shows expired ones)',
        });
      }),
    );

  silence
    .command('expire')
    .description('end a silence now; what it held back is notified at the daemon\'s next cycle')
    .argument('<id>', 'silence id (see `boxwatch silence list`)')
    .option('-c, --config <file>', 'configuration file')
    .addOption(dbOption())
    .action((id: string, opts: { config?: string; db?: string }) =>
      withStore(
        opts,
        ctx,
        async (_store, now, { alerts }) => {
          const found = await alerts.silence(id);
          if (found === undefined) throw new UsageError(`no silence with id "${terminalSafe(id)}" (see \`boxwatch silence list --all\`)`);
          if (!(await alerts.expireSilence(id, now))) {
            ctx.out(`silence ${found.id} had already ended (${iso(found.endsAt)}); nothing changed\n`);
            return;
          }
          ctx.out(`expired silence ${found.id} (${matchersText(found)}); alerts it held back are notified at the daemon's next cycle\n`);
        },
        { write: true },
      ),
    );
};
