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
import { openAlertsMatching, silenceState, type Silence } from '../alerts/index.js';
import { STORE_SECTIONS, loadConfig } from '../config/index.js';
import { formatDuration } from '../duration.js';
import { TIME_HELP } from '../time.js';
import { isoTime as iso } from '../time-format.js';
import { UsageError } from '../errors.js';
import { terminalSafe } from './output.js';
import { clockOf, type CliContext, type RegisterCommand } from './context.js';
import { formatOption, printRows, type OutputFormat } from './output.js';
import { dbOption, withStore } from './store-access.js';
import { relativeTime } from './time-range.js';
import { silenceFromOptions, silenceJson, type SilenceRequest } from '../views/silences.js';

type AddOptions = SilenceRequest & { config?: string };

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
