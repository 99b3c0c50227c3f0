/**
 * `fleet_call_failure_rate`: the failed share of the final calls of the whole account (or of the
 * boxes its `boxes` globs select) that started in the last `window`: one alert for the fleet
 * (serial ''), not one per box. Same judgement as call_failure_rate.
 */
import type { RuleOfKind } from '../config/schema.js';
import { judgeFailureShare, windowText } from './call-failure-rate.js';
import type { FleetContext, RuleResult } from './types.js';

export function evaluateFleetCallFailureRate(rule: RuleOfKind<'fleet_call_failure_rate'>, ctx: FleetContext, wasActive: boolean): RuleResult {
  const facts = ctx.calls?.byRule.get(rule.name);
  if (facts?.kind !== 'fleet_call_failure_rate') return { condition: 'unknown', value: null, summary: 'no fresh call data' };
  return judgeFailureShare(facts.counts, rule, wasActive, windowText({ calls: null, ms: rule.window }));
}
