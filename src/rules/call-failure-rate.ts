/**
 * `call_failure_rate`: the failed share of a box's last `window` final calls (or of those that
 * started in a time window) is above `above` percent; once active it stays active until the
 * share is below `clear_below` (hysteresis). Fewer than `min_calls` final calls: unknown (one
 * failed call of one says nothing). `judgeFailureShare` is shared with fleet_call_failure_rate.
 */
import { formatDuration } from '../duration.js';
import type { FailureCount } from '../domain/calls.js';
import type { KindEvaluator, RuleResult } from './types.js';

/** The share judgement of both failure-rate rules. */
export function judgeFailureShare(
  counts: FailureCount | undefined,
  rule: { above: number; clearBelow: number; minCalls: number },
  wasActive: boolean,
  windowText: string,
): RuleResult {
  const threshold = `above ${rule.above}% of ${windowText} (clears below ${rule.clearBelow}%)`;
  const calls = counts?.calls ?? 0;
  const failed = counts?.failed ?? 0;
  if (calls < rule.minCalls) return { condition: 'unknown', value: null, threshold, summary: `${calls} call${calls === 1 ? '' : 's'} in ${windowText}, fewer than ${rule.minCalls}` };
  const share = (100 * failed) / calls;
  const active = share > rule.above || (wasActive && share >= rule.clearBelow);
  const shown = `${Math.round(share * 10) / 10}%`;
  return {
    condition: active ? 'active' : 'inactive',
    value: shown,
    threshold,
    summary: `${failed} of ${calls} calls failed (${shown}${active ? (share > rule.above ? `, above ${rule.above}%` : `, not yet below ${rule.clearBelow}%`) : ''})`,
  };
}

export function windowText(window: { calls: number | null; ms: number | null }): string {
  return window.calls !== null ? `the last ${window.calls} calls` : `the calls of the last ${formatDuration(window.ms as number)}`;
}

export const evaluateCallFailureRate: KindEvaluator<'call_failure_rate'> = (rule, box, ctx, wasActive) => {
  const facts = ctx.calls?.byRule.get(rule.name);
  if (facts?.kind !== 'call_failure_rate') return { condition: 'unknown', value: null, summary: 'no fresh call data' };
  return judgeFailureShare(facts.bySerial.get(box.serial), rule, wasActive, windowText(rule.window));
};
