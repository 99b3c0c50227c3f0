/**
 * /metrics and /api/boxes are served from a per-cycle snapshot of the fleet: between two cycles,
 * any number of scrapes and API calls read the fleet from the store once, and a new cycle is seen
 * by the very next request. Ages still grow between cycles. Real HTTP, a real SQLite file.
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

  it('ages keep growing between cycles, from the same snapshot', async () => {
    store.recordCycle(okCycle(T0, fleet(3, 80)));
    const age = async (): Promise<number | undefined> => bySerial(parsePromText(await text('/metrics')).samples, 'boxwatch_box_last_seen_age_seconds')['BX-002'];
    expect(await age()).toBe(0);
    clock.advance(12_000);
    expect(await age()).toBe(12);
  });
});

describe('the snapshot of several accounts', () => {
  const of = (account: string, t: number, serials: string[], battery: number): ReturnType<typeof okCycle> => {
    const write = okCycle(t, serials.map((s) => snap(s, { battery, lastSeen: t })));
    return { ...write, cycle: { ...write.cycle, account } };
  };

  it('is the fleet in the store\'s serial order across accounts; a cycle\'s published part replaces only its account\'s boxes, and another process\'s cycle is read for its account only', async () => {
    // Bare serials of the default account fall among the ACCOUNT/ ids ("a-b/" sorts before "acme/").
    store.recordCycle(of('default', T0, ['BX-002', 'b', 'zz', '\u{1F600}', '\uFFFD'], 80));
    store.recordCycle(of('acme', T0 + 1_000, ['acme/BX-1', 'acme/BX-2'], 70));
    store.recordCycle(of('a-b', T0 + 2_000, ['a-b/X'], 60));
    const snapshot = fleetSnapshot(store);
    const serials = async (): Promise<string[]> => (await snapshot.boxes()).map((b) => b.serial);
    expect(await serials()).toEqual(store.boxes().map((b) => b.serial));
    expect(await serials()).toEqual(['BX-002', 'a-b/X', 'acme/BX-1', 'acme/BX-2', 'b', 'zz', '\uFFFD', '\u{1F600}']);

    // This process's cycle of acme publishes acme's part: nothing is read back.
    const reads = vi.spyOn(store, 'boxes');
    store.recordCycle(of('acme', T0 + 30_000, ['acme/BX-1', 'acme/BX-2'], 69));
    snapshot.publish(T0 + 30_000, ['acme'], store.boxes('acme'));
    reads.mockClear();
    const fleet = await snapshot.boxes();
    expect(fleet.map((b) => [b.serial, b.battery])).toEqual([['BX-002', 80], ['a-b/X', 60], ['acme/BX-1', 69], ['acme/BX-2', 69], ['b', 80], ['zz', 80], ['\uFFFD', 80], ['\u{1F600}', 80]]);
    expect(reads).not.toHaveBeenCalled();

    // Another process stores a cycle of a-b: only a-b's part is read again.
    store.recordCycle(of('a-b', T0 + 31_000, ['a-b/X'], 59));
    expect((await snapshot.boxes()).find((b) => b.serial === 'a-b/X')?.battery).toBe(59);
    expect(reads.mock.calls).toEqual([['a-b']]);
  });
});
