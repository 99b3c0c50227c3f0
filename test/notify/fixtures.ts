/** Messages and items for the notification tests, built from the sample group (src/notify/sample.ts). */
import { sampleMessage } from '../../src/notify/sample.js';
import type { AlertItem, NotificationMessage } from '../../src/domain/notifications.js';

export const T0 = Date.parse('2026-01-01T00:00:00Z');
const [SAMPLE_OFFLINE, SAMPLE_BATTERY] = sampleMessage(T0).items as [AlertItem, AlertItem];
export const HOSTILE = '<!channel> *bold* _x_ & <http://evil|click>';

/** An alert item: by default the sample group's first one (box-offline, SN-0042 "Lobby"), firing since T0. */
export function item(overrides: Partial<AlertItem> = {}): AlertItem {
  return { ...SAMPLE_OFFLINE, since: T0, ...overrides };
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

/** The sample group's battery-low item (SN-0007 "Dock 2", 12 % below 20), firing since T0. */
export const batteryItem: AlertItem = { ...SAMPLE_BATTERY, since: T0 };
