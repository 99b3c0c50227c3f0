import { describe, expect, it } from 'vitest';
import { countFiring, firingCounts } from '../../src/alerts/firing.js';
import { initialState } from '../../src/alerts/state.js';
import type { AlertState, AlertStatus } from '../../src/alerts/types.js';
import { fleetStats } from '../../src/notify/fleet.js';

const state = (rule: string, severity: 'warning' | 'critical', serial: string, status: AlertStatus): AlertState => ({ ...initialState({ name: rule, kind: 'battery_low', severity }, serial, 0), status });

describe('firing alerts', () => {
  const states = [
    state('battery', 'warning', 'BX-1', 'firing'),
    state('battery', 'warning', 'BX-2', 'firing'),
    state('battery', 'critical', 'BX-3', 'firing'),
    state('offline', 'critical', 'BX-1', 'pending'),
    state('offline', 'critical', 'BX-2', 'resolved'),
  ];

  it('are counted per rule and severity for the gauge, and in all for the heartbeat and the templates, alike', () => {
    expect(firingCounts(states)).toEqual([
      { rule: 'battery', severity: 'warning', count: 2 },
      { rule: 'battery', severity: 'critical', count: 1 },
    ]);
    expect(countFiring(states)).toBe(3);
    expect(fleetStats([], states).firingAlerts).toBe(3);
  });
});
