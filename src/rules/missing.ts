/**
 * `missing`: active while the box is absent from the device list (it was there before). With
 * `forget_after`, a box missing that long is forgotten (decommissioned): it leaves the fleet, so
 * its alerts resolve instead of repeating for ever (`boxesToForget`).
 */
import { bare, ruleAppliesTo, type BoxState, type KindEvaluator, type RuleConfig } from './types.js';
import { isoTime } from '../time-format.js';

export const evaluateMissing: KindEvaluator<'missing'> = (_rule, box, _ctx, _wasActive, words) =>
  box.missingSince !== null
    ? { condition: 'active', value: 'missing', summary: `missing from the device list since ${isoTime(box.missingSince)}` }
    : words
      ? { condition: 'inactive', value: 'present', summary: 'in the device list' }
      : bare('inactive');

/** Serials of the boxes a missing rule with `forget_after` forgets at `now` (missing at least that long). */
export function boxesToForget(rules: readonly RuleConfig[], boxes: readonly BoxState[], now: number): string[] {
  const forgetting = rules.filter((r) => r.kind === 'missing' && r.forgetAfter > 0);
  if (forgetting.length === 0) return [];
  return boxes
    .filter((b) => b.missingSince !== null && forgetting.some((r) => r.kind === 'missing' && ruleAppliesTo(r, b.serial) && now - (b.missingSince as number) >= r.forgetAfter))
    .map((b) => b.serial);
}
