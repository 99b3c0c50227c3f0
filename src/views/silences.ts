/**
 * A silence as the CLI (`boxwatch silence`) and the HTTP API take and show it: the request checked
 * against the configuration and the time, and its JSON. One place, so both refuse the same.
 */
import { GATEWAY_RULE_NAMES, silenceMatchesEverything, silenceState, validateSilence, type Silence } from '../alerts/index.js';
import type { Config } from '../config/index.js';
import { readDuration } from '../duration.js';
import { UsageError } from '../errors.js';
import { globProblem, matchesAny } from '../glob.js';
import { readTime } from '../time.js';
import { isoTime as iso } from '../time-format.js';

/** What `silence add` and `POST /api/silences` ask for. */
export interface SilenceRequest {
  box: string[];
  rule: string[];
  for?: string;
  comment?: string;
  start?: string;
  by?: string;
  force?: boolean;
}

/** A silence longer than this, or one that matches everything, needs `--force`. */
export const FORCE_SILENCE_OVER_MS = 365 * 86_400_000;

/**
 * Checks `silence add` arguments against the configuration and the time; returns the silence to
 * store (without id). Throws UsageError (exit 2) naming the bad argument.
 */
export function silenceFromOptions(opts: SilenceRequest, config: Config, now: number, env: NodeJS.ProcessEnv): Omit<Silence, 'id'> {
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
