/**
 * Silences, Alertmanager style: a silence is data (matchers, start, end, comment) and whether it
 * silences an alert is a function of `now`. Silenced alerts still change state and are recorded;
 * they are only not notified. What they owe (a firing or a resolved notification) is sent at the
 * first evaluation after the silence ends (see notifyStep in state.ts).
 *
 * Matching (globs of src/glob.ts: `*` any text, `?` one character, case-sensitive):
 * within `boxes` (serial globs) or within `rules` (rule-name globs) any entry may match;
 * when both are given, both must match. Box matchers never match fleet-level alerts (serial '').
 */
import { boxMatches, isFleetKey } from '../box-id.js';
import { globProblem, matchesAny } from '../glob.js';
import { inTimeRange, TIME_RANGE_TEXT } from '../time.js';
import { parseAlertKey, type AlertState } from './types.js';

export interface SilenceMatchers {
  /** Box serial globs, e.g. `SN-00*`. */
  boxes?: string[];
  /** Rule names (globs allowed), e.g. `battery-low`. */
  rules?: string[];
}

export interface Silence {
  id: string;
  matchers: SilenceMatchers;
  /** Inclusive. */
  startsAt: number;
  /** Exclusive: the silence no longer applies at `endsAt`. */
  endsAt: number;
  comment: string;
  createdBy?: string | null;
}

export type SilenceState = 'pending' | 'active' | 'expired';

/** The alert fields a silence looks at. */
export interface AlertLabels {
  rule: string;
  serial: string;
}

/** pending before startsAt, active in [startsAt, endsAt), expired from endsAt. */
export function silenceState(silence: Silence, now: number): SilenceState {
  if (now < silence.startsAt) return 'pending';
  return now < silence.endsAt ? 'active' : 'expired';
}

/** True when the silence's matchers select the alert (regardless of time). */
export function silenceMatches(silence: Pick<Silence, 'matchers'>, alert: AlertLabels): boolean {
  const { boxes = [], rules = [] } = silence.matchers;
  if (boxes.length === 0 && rules.length === 0) return false;
  if (boxes.length > 0 && (isFleetKey(alert.serial) || !boxMatches(alert.serial, boxes))) return false;
  if (rules.length > 0 && !matchesAny(alert.rule, rules)) return false;
  return true;
}

/** Ids of the silences that silence the alert at `now`, in the order given. */
export function matchingSilences(alert: AlertLabels | string, silences: readonly Silence[], now: number): string[] {
  const labels = typeof alert === 'string' ? parseAlertKey(alert) : alert;
  return silences.filter((s) => silenceState(s, now) === 'active' && silenceMatches(s, labels)).map((s) => s.id);
}

/** True when at least one active silence matches the alert (an alert key or its rule and serial). */
export function isSilenced(alert: AlertLabels | string, silences: readonly Silence[], now: number): boolean {
  return matchingSilences(alert, silences, now).length > 0;
}

/** Problems that make a silence unusable (empty when it is fine). */
export function validateSilence(silence: Silence): string[] {
  const problems: string[] = [];
  const { boxes = [], rules = [] } = silence.matchers;
  if (boxes.length === 0 && rules.length === 0) problems.push('a silence needs at least one box glob or rule name');
  if ([...boxes, ...rules].some((m) => m.trim() === '')) problems.push('matchers must not be empty');
  for (const m of [...boxes, ...rules]) {
    const problem = globProblem(m);
    if (problem !== undefined) problems.push(problem);
  }
  if (!inTimeRange(silence.startsAt) || !inTimeRange(silence.endsAt)) problems.push(`a silence must start and end within ${TIME_RANGE_TEXT}`);
  else if (!(silence.endsAt > silence.startsAt)) problems.push('a silence must end after it starts');
  if (silence.comment.trim() === '') problems.push('a silence needs a comment');
  return problems;
}

/** True when the silence matches every alert there can be: every rule (gateway ones too) on every box. */
export function silenceMatchesEverything(silence: Pick<Silence, 'matchers'>): boolean {
  const everything = (globs: readonly string[] | undefined): boolean => globs !== undefined && globs.some((g) => /^\*+$/.test(g));
  const { boxes, rules } = silence.matchers;
  return everything(rules) && (boxes === undefined || boxes.length === 0 || everything(boxes));
}

/** The silence ended at `now` (a pending one never starts; an expired one is unchanged). */
export function expireSilence(silence: Silence, now: number): Silence {
  if (silenceState(silence, now) === 'expired') return silence;
  return { ...silence, startsAt: Math.min(silence.startsAt, now), endsAt: now };
}

/** The open (pending or firing) alerts a silence would hold back: what `silence add` and the dashboard preview show. */
export function openAlertsMatching(silence: Pick<Silence, 'matchers'>, states: Iterable<AlertState>): AlertState[] {
  return [...states].filter((a) => (a.status === 'firing' || a.status === 'pending') && silenceMatches(silence, a));
}
