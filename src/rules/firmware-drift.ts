/**
 * `firmware_drift`: active when a box's firmware differs from the expected version (`majority`:
 * the fleet's most common version; or a fixed version; `none`: no expectation) or is older than
 * `min_version`. Versions compare numerically (2.10.0 is newer than 2.9.3; 2.1 equals 2.1.0).
 */
import type { RuleOfKind } from '../config/schema.js';
import type { KindEvaluator, RuleResult } from './types.js';
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
  const result = (condition: RuleResult['condition'], summary: string): RuleResult =>
    words ? { condition, value: firmware, threshold: thresholdOf(rule, expected), summary } : { condition, value: firmware };

  if (firmware === '') return result('unknown', 'firmware not reported');
  if (rule.minVersion !== undefined && compareVersions(firmware, rule.minVersion) < 0) {
    return result('active', `firmware ${firmware} is older than the minimum ${rule.minVersion}`);
  }
  if (expected === null) return result('unknown', `firmware ${firmware}; fleet majority unknown`);
  if (expected !== undefined && compareVersions(firmware, expected) !== 0) {
    const newer = compareVersions(firmware, expected) > 0;
    return result('active', `firmware ${firmware} is ${newer ? 'newer' : 'older'} than ${rule.expected === 'majority' ? `the fleet majority ${expected}` : `the expected ${expected}`}`);
  }
  return result('inactive', `firmware ${firmware}`);
};
