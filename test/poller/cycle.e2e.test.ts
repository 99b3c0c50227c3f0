/**
 * Poll cycles end to end: the simulator over real HTTP, the real client, a real SQLite file.
 * Simulated time and the poller share one FakeClock, so "5 minutes later" is exact.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { defaultConfig, type Config } from '../../src/config/index.js';
import { createGatewayClient } from '../../src/gateway/client.js';
import { silentLogger } from '../../src/log.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import type { BoxSnapshot } from '../../src/domain/model.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { FakeClock } from '../helpers/fake-clock.js';

const KEY = 'poller-test-key';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Rig {
  sim: RunningSimulator;
  app: App<SqliteStore>;
  clock: FakeClock;
  dbPath: string;
  requests: () => number;
}

async function rig(options: { devices?: number; key?: string; config?: (c: Config) => void } = {}): Promise<Rig> {
  const clock = new FakeClock('2026-03-01T12:00:00Z');
  const sim = await startSimulator({ port: 0, key: KEY, devices: options.devices ?? 20, seed: 3, clock });
  cleanups.push(() => sim.close());
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-poll-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const dbPath = join(dir, 'boxwatch.db');
  const config = defaultConfig(options.key ?? KEY);
  config.gateway.baseUrl = sim.url;
  config.gateways[0]!.baseUrl = sim.url; // the account the daemon polls
  config.storage.path = dbPath;
  options.config?.(config);
  let requests = 0;
  const client = createGatewayClient({ baseUrl: sim.url, secretKey: options.key ?? KEY, retries: 0, onRequest: () => void (requests += 1) });
  const store = openStore(dbPath, { clock });
  const app = createApp({ config, logger: silentLogger, clock, client, store, notifiers: [] });
  cleanups.push(() => app.stop());
  return { sim, app, clock, dbPath, requests: () => requests };
}

describe('poll cycle against the simulator', () => {
  it('fetches details for every box on the first cycle, then only what the policy asks for', async () => {
    const r = await rig({ devices: 20 });
    const first = await r.app.runOnce();
    expect(first?.cycle.outcome).toBe('ok');
    expect(first?.cycle.boxes).toBe(20);
    expect(first?.cycle.detailsFetched).toBe(20);
    expect(r.app.store.boxes()).toHaveLength(20);
    expect(r.app.store.boxes().every((b) => b.signal !== null && b.location !== null)).toBe(true);

    r.clock.advance(30_000);
    const second = await r.app.runOnce();
    expect(second?.cycle.outcome).toBe('ok');
    // 20 boxes * 30 s / 5 min = 2 per tick, plus any whose connected/firmware changed
    expect(second?.cycle.detailsFetched).toBeLessThan(20);
    expect(second?.cycle.detailsFetched).toBeGreaterThanOrEqual(2);
  });

  it('sees a box disconnect and fetches its details at once', async () => {
    const r = await rig();
    await r.app.runOnce();
    const serial = r.app.store.boxes()[0]!.serial;
    r.sim.sim.fleet.apply([r.sim.sim.fleet.get(serial)!], { kind: 'disconnect' });
    r.clock.advance(30_000);
    const result = await r.app.runOnce();
    const box = r.app.store.box(serial)!;
    expect(box.connected).toBe(false);
    expect(box.battery).toBeNull();
    expect(box.detailsAt).toBe(r.clock.now());
    expect(result?.seen.find((b) => b.serial === serial)?.connected).toBe(false);
  });

  it('marks a box that leaves the device list missing (not disconnected), and back when it returns', async () => {
    const r = await rig({ devices: 5 });
    await r.app.runOnce();
    const simBox = r.sim.sim.fleet.boxes[1]!;
    const wasConnected = r.app.store.box(simBox.serial)!.connected;
    r.sim.sim.fleet.apply([simBox], { kind: 'listed', on: false });
    r.clock.advance(30_000);
    const gone = await r.app.runOnce();
    expect(gone?.missing).toEqual([simBox.serial]);
    const missing = r.app.store.box(simBox.serial)!;
    expect(missing.missingSince).toBe(r.clock.now());
    expect(missing.connected).toBe(wasConnected);

    r.clock.advance(30_000);
    const still = await r.app.runOnce();
    expect(still?.missing).toEqual([]); // reported once, when it leaves

    r.sim.sim.fleet.apply([simBox], { kind: 'listed', on: true });
    r.clock.advance(30_000);
    const back = await r.app.runOnce();
    expect(back?.returned).toEqual([simBox.serial]);
    expect(r.app.store.box(simBox.serial)!.missingSince).toBeNull();
  });

  it('records a failed cycle with its reason and leaves box state untouched (503)', async () => {
    const r = await rig();
    await r.app.runOnce();
    const before = r.app.store.boxes();
    r.sim.sim.inject({ status: 503 });
    r.clock.advance(30_000);
    const result = await r.app.runOnce();
    expect(result?.cycle.outcome).toBe('failed');
    expect(result?.cycle.errorCode).toBe('unavailable');
    expect(r.app.store.lastCycle()?.outcome).toBe('failed');
    expect(r.app.store.boxes()).toEqual(before);
  });

  it('records an unauthorized cycle when the key is wrong', async () => {
    const r = await rig({ key: 'not-the-key' });
    const result = await r.app.runOnce();
    expect(result?.cycle.outcome).toBe('failed');
    expect(result?.cycle.errorCode).toBe('unauthorized');
    expect(r.app.store.boxes()).toEqual([]);
    expect(result?.cycle.error ?? '').not.toContain('not-the-key');
  });

  it('treats "no devices" as an empty fleet, not a failure', async () => {
    const r = await rig({ devices: 0 });
    const result = await r.app.runOnce();
    expect(result?.cycle.outcome).toBe('ok');
    expect(result?.cycle.boxes).toBe(0);
  });

  // One bad record once failed every cycle with a schema error: the whole fleet went unwatched.
  it('sets a schema-violating record aside and processes the rest of the fleet; nobody is called missing', async () => {
    const r = await rig();
    await r.app.runOnce();
    const remove = r.sim.sim.inject({ schemaViolation: true, endpoints: ['device_list'] });
    r.clock.advance(30_000);
    const bad = await r.app.runOnce();
    expect(bad?.cycle).toMatchObject({ outcome: 'ok', boxes: 19, rejected: ['(no serial): data[0]: serial_no: expected string, received undefined'] });
    expect(bad?.missing).toEqual([]);
    expect(r.app.store.boxes().filter((b) => b.missingSince !== null)).toEqual([]);
    remove();
    r.clock.advance(30_000);
    const good = await r.app.runOnce();
    expect(good?.cycle).toMatchObject({ outcome: 'ok', boxes: 20, rejected: [] });
    expect(r.app.store.boxes()).toHaveLength(20);
  });

  it('takes a new name from the next device list, a new location and IP from the next details, and moves the gateway\'s times onto our clock', async () => {
    // Details only every hour, so that the cycles after the first fetch none unless a box changes.
    const r = await rig({ devices: 5, config: (c) => void (c.poll.detailsEvery = 3_600_000) });
    const fleet = r.sim.sim.fleet;
    fleet.skewMs = 10 * 60_000; // the gateway's clock 10 minutes ahead
    await r.app.runOnce();
    const boxes = fleet.listed();
    const stored = (serial: string): BoxSnapshot => r.app.store.box(serial)!;
    const where = (serial: string): (string | null)[] => [stored(serial).location, stored(serial).ip];
    for (const box of boxes) {
      expect(stored(box.serial).registeredAt).toBe(box.registeredAt);
      expect(stored(box.serial).lastSeen).toBe(box.lastSeen);
      expect(where(box.serial)).toEqual([box.location, box.ip]);
    }
    const before = new Map(boxes.map((box) => [box.serial, where(box.serial)]));

    boxes.forEach((box, i) => {
      box.name = `Renamed ${i}`;
      Object.assign(box, { location: `Elsewhere, Site ${i}`, ip: `10.99.0.${i}` });
    });
    r.clock.advance(30_000);
    await r.app.runOnce();
    // Every box has its new name; only those whose details came in this cycle (the policy tops one
    // up per tick) have the new location and IP: the device list does not carry them.
    const refreshed = boxes.filter((box) => stored(box.serial).detailsAt === r.clock.now());
    expect(refreshed.length).toBeGreaterThan(0);
    expect(refreshed.length).toBeLessThan(boxes.length);
    boxes.forEach((box, i) => {
      expect(stored(box.serial).name).toBe(`Renamed ${i}`);
      expect(where(box.serial)).toEqual(refreshed.includes(box) ? [`Elsewhere, Site ${i}`, `10.99.0.${i}`] : before.get(box.serial));
    });

    r.clock.advance(3_600_000);
    await r.app.runOnce();
    boxes.forEach((box, i) => {
      expect(where(box.serial)).toEqual([`Elsewhere, Site ${i}`, `10.99.0.${i}`]);
      expect(stored(box.serial).registeredAt).toBe(box.registeredAt);
    });
  });

  it('history survives a restart (the SQLite file is the memory)', async () => {
    const r = await rig();
    await r.app.runOnce();
    const serials = r.app.store.boxes().map((b) => b.serial).sort();
    await r.app.stop();
    cleanups.pop();
    const reopened = openStore(r.dbPath);
    try {
      expect(reopened.boxes().map((b) => b.serial).sort()).toEqual(serials);
      expect(reopened.lastCycle()?.outcome).toBe('ok');
    } finally {
      reopened.close();
    }
  });
});
