/**
 * `weak_signal`: active when the signal is below `below_dbm`; once active it stays active until
 * the signal is above `clear_above_dbm` (hysteresis). A null signal (details not fetched yet) is
 * unknown, and so is the signal of a disconnected box (its last reading is out of date).
 */
import { bare, type KindEvaluator } from './types.js';

export const evaluateWeakSignal: KindEvaluator<'weak_signal'> = (rule, box, _ctx, wasActive, words) => {
  const threshold = words ? `below ${rule.belowDbm} dBm (clears above ${rule.clearAboveDbm} dBm)` : undefined;
  if (!box.connected) return { condition: 'unknown', value: null, threshold, summary: 'signal unknown while disconnected' };
  const signal = box.signal;
  if (signal === null) return { condition: 'unknown', value: null, threshold, summary: 'signal not reported yet' };
  const active = signal < rule.belowDbm || (wasActive && signal <= rule.clearAboveDbm);
  const condition = active ? 'active' : 'inactive';
  if (!words) return bare(condition);
  return {
    condition,
    value: signal,
    threshold,
    summary: active
      ? signal < rule.belowDbm
        ? `signal ${signal} dBm (below ${rule.belowDbm} dBm)`
        : `signal ${signal} dBm (not yet above ${rule.clearAboveDbm} dBm)`
      : `signal ${signal} dBm`,
  };
};
