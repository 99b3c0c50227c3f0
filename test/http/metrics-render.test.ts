/**
 * The per-box families of /metrics are rendered at most once per cycle, right after it while
 * someone scrapes (so that a scrape finds them ready), and not at all after the cycles of a
 * daemon nobody scrapes. Whether they were rendered shows in the boxes' battery readings, which
 * only the rendering reads. The fleet is still read after every cycle, so a scrape while the store
 * cannot be read shows it as last read, scraped before or not.
 */
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics.js';
import type { BoxState } from '../../src/domain/store.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { snap } from '../store/model.js';
import { bySerial, parsePromText } from './prom-text.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');

/** The fleet as one cycle left it (`battery` for every box), counting how often a battery was read. */
function fleetOfCycle(n: number, battery: number, reads: { count: number }): BoxState[] {
  return Array.from({ length: n }, (_, i) => {
    const box: BoxState = { ...snap(`BX-${String(i + 1).padStart(3, '0')}`, { lastSeen: T0 }), account: 'default', firstSeen: T0, lastPolled: T0, missingSince: null };
    Object.defineProperty(box, 'battery', {
      enumerable: true,
      get: () => {
        reads.count += 1;
        return battery;
      },
    });
    return box;
  });
}

/** Metrics whose boxes provider returns the fleet of the last cycle (the daemon's per-cycle snapshot), or fails while `storeDown`. */
function daemonMetrics() {
  const metrics = createMetrics({ clock: new FakeClock(T0), processMetrics: false });
  const state = { fleet: [] as BoxState[], storeDown: false };
  metrics.setBoxesProvider(() => {
    if (state.storeDown) throw new Error('the database cannot be used right now');
    return state.fleet;
  });
  return { metrics, state };
}

const batteryOf = async (text: Promise<string>, serial: string): Promise<number | undefined> => bySerial(parsePromText(await text).samples, 'boxwatch_box_battery_percent')[serial];

describe('the per-box families of /metrics', () => {
  it('are not rendered after the cycles of a daemon nobody scrapes; the first scrape renders them', async () => {
    const { metrics, state } = daemonMetrics();
    const reads = { count: 0 };
    for (const battery of [80, 79, 78]) {
      state.fleet = fleetOfCycle(50, battery, reads);
      await metrics.prepare(); // what the daemon does after each cycle
    }
    expect(reads.count).toBe(0);
    expect(await batteryOf(metrics.text(), 'BX-007')).toBe(78);
    expect(reads.count).toBe(50);
  });

  it('while someone scrapes, are rendered right after each cycle, once, and scrapes reuse them', async () => {
    const { metrics, state } = daemonMetrics();
    const reads = { count: 0 };
    state.fleet = fleetOfCycle(50, 80, reads);
    await metrics.prepare();
    expect(await batteryOf(metrics.text(), 'BX-007')).toBe(80);
    expect(reads.count).toBe(50);

    state.fleet = fleetOfCycle(50, 79, reads);
    await metrics.prepare(); // scraped since the last cycle: rendered now
    expect(reads.count).toBe(100);
    for (let i = 0; i < 3; i++) expect(await batteryOf(metrics.text(), 'BX-007')).toBe(79);
    expect(reads.count).toBe(100);

    state.fleet = fleetOfCycle(50, 78, reads);
    await metrics.prepare(); // scraped since the last cycle: rendered now
    expect(reads.count).toBe(150);
    state.fleet = fleetOfCycle(50, 77, reads);
    await metrics.prepare(); // the scrapes stopped: nothing rendered
    expect(reads.count).toBe(150);
  });

  it('show the fleet as last read while the store cannot be read, though nobody scraped before', async () => {
    const { metrics, state } = daemonMetrics();
    state.fleet = fleetOfCycle(50, 80, { count: 0 });
    await metrics.prepare();
    state.storeDown = true;
    expect(await batteryOf(metrics.text(), 'BX-007')).toBe(80);
  });
});
