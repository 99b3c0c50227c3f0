/**
 * The sample alert group `boxwatch notify-test --render` renders: what a real group looks like
 * (two boxes firing, one with a value and threshold, one resolved), with fixed names so that the
 * output is easy to compare against a template.
 */
import type { FleetStats } from './templates.js';
import type { NotificationMessage } from '../domain/notifications.js';

const MINUTE = 60_000;

/** A group of three alerts as the engine would queue it at `now`. */
export function sampleMessage(now: number, source?: string): NotificationMessage {
  return {
    kind: 'alert',
    createdAt: now,
    ...(source ? { source } : {}),
    items: [
      {
        status: 'firing',
        rule: 'box-offline',
        ruleKind: 'disconnected',
        severity: 'critical',
        serial: 'SN-0042',
        boxName: 'Lobby',
        location: 'Building A',
        since: now - 7 * MINUTE,
        summary: 'disconnected',
      },
      {
        status: 'firing',
        rule: 'battery-low',
        ruleKind: 'low_battery',
        severity: 'warning',
        serial: 'SN-0007',
        boxName: 'Dock 2',
        location: 'Warehouse',
        value: 12,
        threshold: 'below 20',
        since: now - 25 * MINUTE,
        summary: 'battery 12% below 20%',
      },
      {
        status: 'resolved',
        rule: 'signal-weak',
        ruleKind: 'weak_signal',
        severity: 'warning',
        serial: 'SN-0113',
        boxName: 'Car park',
        location: 'Building C',
        value: -88,
        threshold: 'below -100',
        since: now - 95 * MINUTE,
        resolvedAt: now - 2 * MINUTE,
        summary: 'signal -88 dBm',
      },
    ],
  };
}

/** The fleet counts that go with the sample group. */
export const SAMPLE_FLEET: FleetStats = { boxes: 120, connected: 119, disconnected: 1, firingAlerts: 2 };
