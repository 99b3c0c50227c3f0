import { beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../helpers/fake-clock.js';
import { MAJORITY_FIRMWARE, TICK_MS } from '../../src/sim/fleet.js';
import { Simulator } from '../../src/sim/simulator.js';
import type { Device } from '../../src/gateway/schemas.js';

const START = Date.parse('2026-03-01T00:00:00Z');
const MINUTE = 60_000;

/** Device records of the whole fleet at every minute of the first `minutes` minutes. */
function history(seed: number, minutes: number, devices = 40): Device[][] {
  const clock = new FakeClock(START);
  const sim = new Simulator({ seed, devices, clock, start: START });
  const frames: Device[][] = [];
  for (let m = 0; m <= minutes; m++) {
    sim.sync();
    frames.push(sim.fleet.boxes.map((b) => sim.fleet.details(b)));
    clock.advance(MINUTE);
  }
  return frames;
}

describe('fleet model: determinism', () => {
  it('gives the same fleet and the same first hour for the same seed', () => {
    expect(history(42, 60)).toEqual(history(42, 60));
  });

  it('gives a different fleet for a different seed', () => {
    expect(history(42, 0)[0]).not.toEqual(history(43, 0)[0]);
  });

  it('does not depend on how often it is asked', () => {
    const clock = new FakeClock(START);
    const polled = new Simulator({ seed: 5, devices: 30, clock, start: START });
    for (let i = 0; i < 60; i++) {
      clock.advance(MINUTE);
      polled.sync();
    }
    const clock2 = new FakeClock(START);
    const once = new Simulator({ seed: 5, devices: 30, clock: clock2, start: START });
    clock2.advance(60 * MINUTE);
    once.sync();
    expect(once.fleet.summaries()).toEqual(polled.fleet.summaries());
  });

  it('keeps a box the same whatever the size of the fleet', () => {
    const small = history(9, 30, 10).at(-1)?.[4];
    const large = history(9, 30, 200).at(-1)?.[4];
    expect(small?.serial_no).toBe('BX-00005');
    expect(large).toMatchObject({ serial_no: 'BX-00005', battery_level: small?.battery_level, connected: small?.connected, signal_strength: small?.signal_strength });
  });
});

describe('fleet model: behaviour over a simulated day', () => {
  const clock = new FakeClock(START);
  const sim = new Simulator({ seed: 3, devices: 200, clock, start: START });
  const frames: Device[][] = [];
  let all: Device[] = [];
  beforeAll(() => {
    for (let t = 0; t <= 24 * 60; t += 5) {
      sim.sync();
      frames.push(sim.fleet.boxes.map((b) => sim.fleet.details(b)));
      clock.advance(5 * MINUTE);
    }
    all = frames.flat();
  });

  it('reports battery null exactly while a box is disconnected', () => {
    expect(all.filter((d) => (d.battery_level === null) !== !d.connected)).toEqual([]);
    expect(all.filter((d) => d.battery_level !== null && (d.battery_level < 0 || d.battery_level > 100))).toEqual([]);
    expect(all.some((d) => d.battery_level === null)).toBe(true);
  });

  it('has boxes that disconnect and later reconnect', () => {
    const bounced = sim.fleet.boxes.filter((_, i) => {
      const states = frames.map((f) => f[i]?.connected);
      const down = states.indexOf(false);
      return down >= 0 && states.slice(down).includes(true);
    });
    expect(bounced.length).toBeGreaterThan(3);
  });

  it('has batteries that drain and batteries that charge', () => {
    let drained = 0;
    let charged = 0;
    for (let i = 0; i < 200; i++) {
      for (let f = 1; f < frames.length; f++) {
        const a = frames[f - 1]?.[i]?.battery_level;
        const b = frames[f]?.[i]?.battery_level;
        if (a == null || b == null) continue;
        if (b < a) drained++;
        if (b > a) charged++;
      }
    }
    expect(drained).toBeGreaterThan(100);
    expect(charged).toBeGreaterThan(100);
  });

  it('wanders signal strength within a plausible dBm range', () => {
    const signals = all.map((d) => d.signal_strength);
    expect(Math.min(...signals)).toBeGreaterThanOrEqual(-125);
    expect(Math.max(...signals)).toBeLessThanOrEqual(-45);
    const first = frames.map((f) => f[0]?.signal_strength);
    expect(new Set(first).size).toBeGreaterThan(3);
  });

  it('advances last_seen of connected boxes, and sometimes stalls it while the box says connected', () => {
    let stale = 0;
    let fresh = 0;
    let connected = 0;
    let future = 0;
    frames.forEach((frame, f) => {
      const now = START + f * 5 * MINUTE;
      for (const d of frame) {
        const age = now - Date.parse(d.last_seen);
        if (age < 0) future++;
        if (!d.connected) continue;
        connected++;
        if (age <= TICK_MS) fresh++;
        if (age > 5 * MINUTE) stale++;
      }
    });
    expect(future).toBe(0);
    expect(fresh / connected).toBeGreaterThan(0.95);
    expect(stale).toBeGreaterThan(0);
  });

  it('runs a majority firmware and a few versions that lag behind', () => {
    const versions = new Map<string, number>();
    for (const d of frames[0] ?? []) versions.set(d.firmware_version, (versions.get(d.firmware_version) ?? 0) + 1);
    expect((versions.get(MAJORITY_FIRMWARE) ?? 0) / 200).toBeGreaterThan(0.75);
    expect(versions.size).toBeGreaterThanOrEqual(3);
  });

  it('has unique serials and ids, and groups boxes by location', () => {
    const first = frames[0] ?? [];
    expect(new Set(first.map((d) => d.serial_no)).size).toBe(200);
    expect(new Set(first.map((d) => d.id)).size).toBe(200);
    expect(new Set(first.map((d) => d.location)).size).toBeLessThan(100);
  });
});
