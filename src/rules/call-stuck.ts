/**
 * `call_stuck`: the box has a call still `initiated` after `max_duration` (a call that never
 * ends). Calls older than `calls.catch_up` are no longer asked about and do not count.
 */
import { formatDuration } from '../duration.js';
import type { KindEvaluator } from './types.js';

export const evaluateCallStuck: KindEvaluator<'call_stuck'> = (rule, box, ctx) => {
  const calls = ctx.calls;
  const facts = calls?.byRule.get(rule.name);
  if (calls === null || facts?.kind !== 'call_stuck') return { condition: 'unknown', value: null, summary: 'no fresh call data' };
  const threshold = `initiated longer than ${formatDuration(rule.maxDuration)}`;
  const stuck = facts.bySerial.get(box.serial);
  if (stuck === undefined) return { condition: 'inactive', value: 0, threshold, summary: 'no call initiated too long' };
  const age = formatDuration(Math.max(0, calls.at - stuck.oldest));
  return {
    condition: 'active',
    value: stuck.count,
    threshold,
    summary: `${stuck.count} call${stuck.count === 1 ? '' : 's'} initiated longer than ${formatDuration(rule.maxDuration)} (the oldest for ${age})`,
  };
};
