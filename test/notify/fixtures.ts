/** Messages and items for the notification tests. */
import type { AlertItem, NotificationMessage } from '../../src/notify/types.js';

export const T0 = Date.parse('2026-01-01T00:00:00Z');
export const HOSTILE = '<!channel> *bold* _x_ & <http://evil|click>';

export function item(overrides: Partial<AlertItem> = {}): AlertItem {
  return {
    status: 'firing',
    rule: 'box-offline',
    ruleKind: 'disconnected',
    severity: 'critical',
    serial: 'SN-0042',
    boxName: 'Lobby',
    location: 'Building A',
    since: T0,
    summary: 'disconnected',
    ...overrides,
  };
}

export function message(items: AlertItem[], createdAt = T0 + 5 * 60_000): NotificationMessage {
  return { kind: 'alert', items, createdAt };
}

/** `count` boxes disconnected at once (a site power cut). */
export function powerCut(count: number): NotificationMessage {
  return message(
    Array.from({ length: count }, (_, i) =>
      item({ serial: `SN-${String(i + 1).padStart(4, '0')}`, boxName: i === 0 ? HOSTILE : `Box ${i + 1}`, location: 'Site B' }),
    ),
  );
}

export const batteryItem = item({
  rule: 'battery-low',
  ruleKind: 'low_battery',
  severity: 'warning',
  serial: 'SN-0007',
  boxName: 'Dock 2',
  location: 'Warehouse',
  value: 12,
  threshold: 'below 20',
  summary: 'battery 12% below 20%',
});
