/**
 * Firing alerts counted, once for all who count them: the heartbeat's log line, the templates'
 * `fleet.firingAlerts` and the boxwatch_alerts_firing gauge must agree on what is firing.
 */
import type { AlertState } from './types.js';

/** Firing alerts of one rule and severity. */
export interface FiringAlertCount {
  rule: string;
  severity: string;
  count: number;
}

/** Firing alerts counted by rule and severity (the boxwatch_alerts_firing gauge). */
export function firingCounts(states: Iterable<AlertState>): FiringAlertCount[] {
  const counts = new Map<string, FiringAlertCount>();
  for (const s of states) {
    if (s.status !== 'firing') continue;
    const key = `${s.rule}\u0000${s.severity}`;
    const c = counts.get(key) ?? { rule: s.rule, severity: s.severity, count: 0 };
    c.count += 1;
    counts.set(key, c);
  }
  return [...counts.values()];
}

/** All firing alerts (the heartbeat, `fleet.firingAlerts`). */
export function countFiring(states: Iterable<AlertState>): number {
  let n = 0;
  for (const c of firingCounts(states)) n += c.count;
  return n;
}
