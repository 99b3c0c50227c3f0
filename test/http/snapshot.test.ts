/**
 * /metrics and /api/boxes are served from a per-cycle snapshot of the fleet: between two cycles,
 * any number of scrapes and API calls read the fleet from the store once, and a new cycle is seen
 * by the very next request. Ages still grow between cycles. While someone scrapes, the daemon
 * reads and renders the fleet right after each cycle (so scrapes find it ready); while nobody
 * does, it does neither. Real HTTP, a real SQLite file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fleetSnapshot, startHttpServer, type RunningHttpServer } from '../../src/http/index.js';
import { silentLogger } from '../../src/log.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { okCycle, snap } from '../store/model.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { bySerial, parsePromText } from './prom-text.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');

let dir: string;
let clock: FakeClock;
let store: SqliteStore;
let metrics: Metrics;
let server: RunningHttpServer;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-snapshot-'));
  clock = new FakeClock(T0);
  store = openStore(join(dir, 'boxwatch.db'), { clock });
  metrics = createMetrics({ clock, processMetrics: false });
  const snapshot = fleetSnapshot(store);
  metrics.setBoxesProvider(() => snapshot.boxes());
  server = await startHttpServer({ listen: '127.0.0.1:0', store, snapshot, metrics, clock, health: { maxCycleAgeMs: 90_000 }, logger: silentLogger });
});

afterEach(async () => {
  await server.close();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const text = async (path: string): Promise<string> => (await fetch(`${server.url}${path}`)).text();
const fleet = (n: number, battery: number) => Array.from({ length: n }, (_, i) => snap(`BX-${String(i + 1).padStart(3, '0')}`, { battery, lastSeen: clock.now() }));

describe('the per-cycle snapshot', () => {
  it('concurrent scrapes and /api/boxes calls between two cycles read the fleet once; the next cycle is seen at once', async () => {
    store.recordCycle(okCycle(T0, fleet(50, 80)));
    const reads = vi.spyOn(store, 'boxes');
    const answers = await Promise.all([...Array.from({ length: 8 }, () => text('/metrics')), ...Array.from({ length: 4 }, () => text('/api/boxes'))]);
    expect(reads).toHaveBeenCalledTimes(1);
    const battery = bySerial(parsePromText(answers[0]!).samples, 'boxwatch_box_battery_percent');
    expect(Object.keys(battery)).toHaveLength(50);
    expect(battery['BX-007']).toBe(80);
    expect(new Set(answers.slice(0, 8).map((t) => t.replace(/^boxwatch_box_last_seen_age_seconds.*$/gm, ''))).size).toBe(1);
    expect((JSON.parse(answers[8]!) as { boxes: unknown[] }).boxes).toHaveLength(50);

    clock.advance(30_000);
    store.recordCycle(okCycle(T0 + 30_000, fleet(50, 79)));
    const after = parsePromText(await text('/metrics')).samples;
    expect(bySerial(after, 'boxwatch_box_battery_percent')['BX-007']).toBe(79);
    const boxes = (JSON.parse(await text('/api/boxes')) as { boxes: { serial: string; battery: number }[] }).boxes;
    expect(boxes.find((b) => b.serial === 'BX-007')?.battery).toBe(79);
    expect(reads).toHaveBeenCalledTimes(2);
  });

  it('after a cycle the fleet is read ahead of the next scrape only while someone scrapes /metrics', async () => {
    const reads = vi.spyOn(store, 'boxes');
    store.recordCycle(okCycle(T0, fleet(20, 80)));
    await metrics.prepare(); // what the daemon does after each cycle: nobody scraped yet
    expect(reads).not.toHaveBeenCalled();

    expect(bySerial(parsePromText(await text('/metrics')).samples, 'boxwatch_box_battery_percent')['BX-007']).toBe(80);
    expect(reads).toHaveBeenCalledTimes(1);
    clock.advance(30_000);
    store.recordCycle(okCycle(T0 + 30_000, fleet(20, 79)));
    await metrics.prepare(); // scraped since the last cycle: rendered now, not by the next scrape
    expect(reads).toHaveBeenCalledTimes(2);
    expect(bySerial(parsePromText(await text('/metrics')).samples, 'boxwatch_box_battery_percent')['BX-007']).toBe(79);
    expect(reads).toHaveBeenCalledTimes(2);

    clock.advance(30_000);
    store.recordCycle(okCycle(T0 + 60_000, fleet(20, 78)));
    await metrics.prepare(); // scraped once since the previous cycle
    expect(reads).toHaveBeenCalledTimes(3);
    clock.advance(30_000);
    store.recordCycle(okCycle(T0 + 90_000, fleet(20, 77)));
    await metrics.prepare(); // no scrape since: nothing read
    expect(reads).toHaveBeenCalledTimes(3);
    expect(bySerial(parsePromText(await text('/metrics')).samples, 'boxwatch_box_battery_percent')['BX-007']).toBe(77);
  });

  it('ages keep growing between cycles, from the same snapshot', async () => {
    store.recordCycle(okCycle(T0, fleet(3, 80)));
    const age = async (): Promise<number | undefined> => bySerial(parsePromText(await text('/metrics')).samples, 'boxwatch_box_last_seen_age_seconds')['BX-002'];
    expect(await age()).toBe(0);
    clock.advance(12_000);
    expect(await age()).toBe(12);
  });
});
