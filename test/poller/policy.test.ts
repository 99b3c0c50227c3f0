import { describe, expect, it } from 'vitest';
import type { DeviceSummary } from '../../src/gateway/schemas.js';
import { selectForDetails } from '../../src/poller/policy.js';
import type { BoxState } from '../../src/domain/store.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const policy = { detailsEveryMs: 300_000, tickIntervalMs: 30_000 };

function summary(i: number, over: Partial<DeviceSummary> = {}): DeviceSummary {
  return {
    id: i,
    serial_no: `SN-${String(i).padStart(4, '0')}`,
    device_name: `Box ${i}`,
    connected: true,
    battery_level: 80,
    last_seen: new Date(T0).toISOString(),
    firmware_version: '2.10.0',
    ...over,
  };
}

function state(s: DeviceSummary, detailsAt: number | null): BoxState {
  return {
    serial: s.serial_no,
    account: 'default',
    id: s.id,
    name: s.device_name,
    connected: s.connected,
    battery: s.battery_level,
    signal: -80,
    firmware: s.firmware_version,
    lastSeen: T0,
    registeredAt: T0,
    location: 'x',
    ip: '10.0.0.1',
    detailsAt,
    firstSeen: T0,
    lastPolled: T0,
    missingSince: null,
  };
}

describe('details policy', () => {
  it('fetches details for every box seen for the first time', () => {
    const list = [summary(1), summary(2)];
    expect(selectForDetails(list, new Map(), T0, policy).sort()).toEqual(['SN-0001', 'SN-0002']);
  });

  it('fetches details when connected or firmware changed in the summary', () => {
    const a = summary(1);
    const b = summary(2);
    const c = summary(3);
    const known = new Map([a, b, c].map((s) => [s.serial_no, state(s, T0)]));
    const now = T0 + 10_000;
    const list = [{ ...a, connected: false }, { ...b, firmware_version: '2.11.0' }, c];
    // budget for 3 boxes is ceil(3*30/300) = 1, already used by the changed ones
    expect(selectForDetails(list, known, now, policy).sort()).toEqual(['SN-0001', 'SN-0002']);
  });

  it('never lets details get older than details_every', () => {
    const list = Array.from({ length: 10 }, (_, i) => summary(i));
    const known = new Map(list.map((s) => [s.serial_no, state(s, T0)]));
    expect(selectForDetails(list, known, T0 + 300_000, policy)).toHaveLength(10);
  });

  it('spreads refreshes so every tick fetches about the same number of boxes', () => {
    const list = Array.from({ length: 100 }, (_, i) => summary(i));
    const known = new Map<string, BoxState>();
    const perTick: number[] = [];
    for (let tick = 0; tick < 40; tick++) {
      const now = T0 + tick * 30_000;
      const due = selectForDetails(list, known, now, policy);
      perTick.push(due.length);
      for (const s of list) {
        const prev = known.get(s.serial_no);
        known.set(s.serial_no, state(s, due.includes(s.serial_no) ? now : (prev?.detailsAt ?? null)));
      }
      for (const b of known.values()) expect(now - (b.detailsAt as number)).toBeLessThan(300_000);
    }
    // first tick: the whole fleet; afterwards a steady 10 per tick (100 boxes * 30 s / 5 min)
    expect(perTick[0]).toBe(100);
    expect(Math.max(...perTick.slice(1))).toBe(10);
    expect(Math.min(...perTick.slice(1))).toBe(10);
  });
});
