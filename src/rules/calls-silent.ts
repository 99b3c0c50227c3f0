/**
 * `calls_silent`: a box that placed calls on each of the `active_days` days before has placed
 * none for `for` (its newest call started longer ago). A box without that daily habit is
 * inactive: it may be idle on purpose.
 */
import { formatDuration } from '../duration.js';
import type { KindEvaluator } from './types.js';

export const evaluateCallsSilent: KindEvaluator<'calls_silent'> = (rule, box, ctx) => {
  const calls = ctx.calls;
  const facts = calls?.byRule.get(rule.name);
  if (calls === null || facts?.kind !== 'calls_silent') return { condition: 'unknown', value: null, summary: 'no fresh call data' };
  const threshold = `no call for ${formatDuration(rule.silentFor)} after calls on each of ${rule.activeDays} days`;
  const last = facts.lastCall.get(box.serial);
  if (!facts.dailyCallers.has(box.serial) || last === undefined) return { condition: 'inactive', value: null, threshold, summary: 'does not place calls every day' };
  const quiet = Math.max(0, calls.at - last);
  const active = quiet >= rule.silentFor;
  return {
    condition: active ? 'active' : 'inactive',
    value: formatDuration(quiet),
    threshold,
    summary: active ? `no call for ${formatDuration(quiet)} (it placed calls every day before)` : `last call ${formatDuration(quiet)} ago`,
  };
};
