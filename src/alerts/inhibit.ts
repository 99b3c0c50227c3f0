/**
 * Inhibition: while a box's `disconnected` alert is firing, that box's battery, signal,
 * staleness and call alerts are held back. Held back means not notified: the target alerts still change
 * state and their transitions are recorded (as in Alertmanager, where inhibition acts on
 * notifications only), and what they owe is notified once the source alert stops firing.
 */
import { isFleetKey } from '../box-id.js';
import type { AlertState } from './types.js';

/** Alerts of `targetKinds` on a box are held back while an alert of `sourceKinds` fires on the same box. */
export interface InhibitRule {
  sourceKinds: readonly string[];
  targetKinds: readonly string[];
}

export const DEFAULT_INHIBIT_RULES: readonly InhibitRule[] = [
  { sourceKinds: ['disconnected'], targetKinds: ['low_battery', 'weak_signal', 'stale'] },
  // A disconnected box places no calls, and the calls it had in flight fail or hang: its call alerts say nothing new.
  { sourceKinds: ['disconnected'], targetKinds: ['call_failure_rate', 'call_stuck', 'calls_silent', 'test_call_failed'] },
];

/**
 * Maps the key of every inhibited alert to the keys of the firing alerts that inhibit it.
 * Fleet-level alerts (serial '') neither inhibit nor are inhibited. An alert never inhibits itself.
 */
export function inhibitedBy(states: Iterable<AlertState>, rules: readonly InhibitRule[] = DEFAULT_INHIBIT_RULES): Map<string, string[]> {
  const all = [...states].filter((s) => !isFleetKey(s.serial));
  const firingBySerial = new Map<string, AlertState[]>();
  for (const s of all) {
    if (s.status !== 'firing') continue;
    const list = firingBySerial.get(s.serial);
    if (list) list.push(s);
    else firingBySerial.set(s.serial, [s]);
  }
  const result = new Map<string, string[]>();
  if (firingBySerial.size === 0) return result;
  for (const target of all) {
    const sources = firingBySerial.get(target.serial);
    if (!sources) continue;
    const by = sources
      .filter((src) => src.key !== target.key && rules.some((r) => r.sourceKinds.includes(src.kind) && r.targetKinds.includes(target.kind)))
      .map((src) => src.key)
      .sort();
    if (by.length > 0) result.set(target.key, by);
  }
  return result;
}
