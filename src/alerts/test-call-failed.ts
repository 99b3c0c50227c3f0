/**
 * `test_call_failed`, the built-in alert of test calls (docs/calls.md, "Test calls"): per box,
 * active while the box's latest decided test call failed (the call failed, was not completed
 * within its entry's `timeout`, or make-call refused it), inactive once a later test call from
 * the box completed. The verdicts come from src/calls/test-calls.ts; a box without one is not
 * judged. Fires at once (no `for`); the engine's silences, inhibition and grouping apply.
 */
import { alertRuleRef, ruleEvaluation, type RuleEvaluation } from './types.js';
import type { TestCallVerdict } from '../domain/test-calls.js';
import { TEST_CALL_FAILED } from '../vocabulary.js';

/** The evaluations of `test_call_failed` for the boxes of this cycle that have a verdict. */
export function testCallEvaluations(verdicts: ReadonlyMap<string, TestCallVerdict>, serials: Iterable<string>): RuleEvaluation[] {
  const out: RuleEvaluation[] = [];
  for (const serial of serials) {
    const v = verdicts.get(serial);
    if (v === undefined) continue;
    const rule = alertRuleRef(TEST_CALL_FAILED, TEST_CALL_FAILED, v.severity, 0, 0);
    out.push(ruleEvaluation(rule, serial, v.failed ? 'active' : 'inactive', v.failed ? 'failed' : 'completed', v.threshold, v.summary));
  }
  return out;
}
