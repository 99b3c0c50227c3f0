/**
 * `low_battery`: active when the battery is below `below` percent; once active it stays active
 * until the battery is above `clear_above` (hysteresis, so a battery wavering around the threshold
 * does not flap). A null battery, and any battery of a disconnected box, is unknown, never zero.
 */
import { bare, type KindEvaluator } from './types.js';

export const evaluateLowBattery: KindEvaluator<'low_battery'> = (rule, box, _ctx, wasActive, words) => {
  const threshold = words ? `below ${rule.below}% (clears above ${rule.clearAbove}%)` : undefined;
  if (!box.connected) return { condition: 'unknown', value: null, threshold, summary: 'battery unknown while disconnected' };
  const battery = box.battery;
  if (battery === null) return { condition: 'unknown', value: null, threshold, summary: 'battery not reported' };
  const active = battery < rule.below || (wasActive && battery <= rule.clearAbove);
  const condition = active ? 'active' : 'inactive';
  if (!words) return bare(condition);
  return {
    condition,
    value: battery,
    threshold,
    summary: active
      ? battery < rule.below
        ? `battery ${battery}% (below ${rule.below}%)`
        : `battery ${battery}% (not yet above ${rule.clearAbove}%)`
      : `battery ${battery}%`,
  };
};
