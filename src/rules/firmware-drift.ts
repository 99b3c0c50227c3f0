/**
 * `firmware_drift`: active when a box's firmware differs from the expected version (`majority`:
 * the fleet's most common version; or a fixed version; `none`: no expectation) or is older than
 * `min_version`. Versions compare numerically (2.10.0 is newer than 2.9.3; 2.1 equals 2.1.0).
 */
import type { RuleOfKind } from '../config/schema.js';
import { bare, type KindEvaluator, type RuleResult } from './types.js';
import { compareVersions } from './version.js';

/** The expectation in words: "expected 2.10.0 (fleet majority), at least 2.9". */
function thresholdOf(rule: RuleOfKind<'firmware_drift'>, expected: string | null | undefined): string {
  const expectation =
    rule.expected === 'majority' ? `${expected ?? 'unknown'} (fleet majority)` : expected === undefined ? undefined : expected;
  return [expectation && `expected ${expectation}`, rule.minVersion && `at least ${rule.minVersion}`].filter(Boolean).join(', ');
}

export const evaluateFirmwareDrift: KindEvaluator<'firmware_drift'> = (rule, box, ctx, _wasActive, words) => {
  const firmware = box.firmware;
  const expected = rule.expected === 'majority' ? ctx.firmwareMajority : rule.expected === 'none' ? undefined : rule.expected;
  // No helper closure here: this runs for every box at every cycle, and a closure per call would
  // be the largest allocation of the cycle's rules.
  const w = words ? { rule, expected } : null;

  if (firmware === '') return result('unknown', firmware, w, 'firmware not reported');
  if (rule.minVersion !== undefined && compareVersions(firmware, rule.minVersion) < 0) {
    return result('active', firmware, w, `firmware ${firmware} is older than the minimum ${rule.minVersion}`);
  }
  if (expected === null) return result('unknown', firmware, w, `firmware ${firmware}; fleet majority unknown`);
  if (expected !== undefined && compareVersions(firmware, expected) !== 0) {
    const newer = compareVersions(firmware, expected) > 0;
    return result('active', firmware, w, `firmware ${firmware} is ${newer ? 'newer' : 'older'} than ${rule.expected === 'majority' ? `the fleet majority ${expected}` : `the expected ${expected}`}`);
  }
  return w === null ? bare('inactive') : result('inactive', firmware, w, `firmware ${firmware}`);
};

/** The result; with words (`w`: the rule and the version expected) the value, the threshold and the summary too. */
function result(
  condition: RuleResult['condition'],
  firmware: string,
  w: { rule: RuleOfKind<'firmware_drift'>; expected: string | null | undefined } | null,
  summary: string,
): RuleResult {
  return w === null ? bare(condition) : { condition, value: firmware, threshold: thresholdOf(w.rule, w.expected), summary };
}
