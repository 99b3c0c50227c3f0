/**
 * /metrics and /api/boxes at 10,000 boxes, served from the per-cycle snapshot (src/http/snapshot.ts):
 * a real SQLite file filled by recordCycle, the real metrics (process metrics included) and the
 * real HTTP server on 127.0.0.1. After each of several cycles, as a daemon that is scraped does:
 * the boxes the cycle read are published to the snapshot and the fleet is rendered once
 * (`metrics.prepare()`; a daemon nobody scrapes does not render it);
 * then scrapes, 8 concurrent scrapes, and /api/boxes (its JSON rendered on the first call). For
 * reference, the same scrape without the snapshot (the fleet read and rendered at every scrape).
 * Server time is the CPU time of `metrics.text()` in this process (the machine is shared, so wall
 * times are inflated by other jobs); wall time is the HTTP round trip, transfer included.
 *
 *   npm run build && node dist/bench/metrics.bench.js [--boxes 10000] [--cycles 5]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fleetSnapshot, startHttpServer } from '../src/http/index.js';
import { silentLogger } from '../src/log.js';
import { createMetrics } from '../src/metrics.js';
import type { BoxSnapshot } from '../src/domain/model.js';
import { openStore } from '../src/store/index.js';
import type { CycleWrite } from '../src/domain/store.js';

const { values } = parseArgs({ options: { boxes: { type: 'string', default: '10000' }, cycles: { type: 'string', default: '5' } } });
const boxes = Number(values.boxes);
const cycles = Number(values.cycles);
const T0 = Date.UTC(2026, 10, 1);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const ms = (x: number): string => `${x.toFixed(1)} ms`;

function cycle(t: number, i: number): CycleWrite {
  const seen: BoxSnapshot[] = [];
  for (let b = 0; b < boxes; b++) {
    seen.push({
      serial: `BX-${String(b + 1).padStart(6, '0')}`, id: b + 1, name: `Box "${b + 1}" \\ depot`, connected: (b + i) % 50 !== 0,
      battery: 40 + ((b * 7 + i) % 60), signal: -60 - ((b + i) % 30), firmware: '3.4.2', lastSeen: t - 1000,
      registeredAt: T0 - 86_400_000, location: 'Lyon', ip: '10.0.0.1', detailsAt: t,
    });
  }
  return { cycle: { startedAt: t, durationMs: 500, requests: 1, outcome: 'ok', errorCode: null, error: null, boxes, detailsFetched: 0 }, seen, missing: [] };
}

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const r = await fn();
  return [r, performance.now() - t0];
}

/** CPU time (user + system of this process) of a synchronous or in-process piece of work. */
async function cpu(fn: () => unknown): Promise<number> {
  const c0 = process.cpuUsage();
  await fn();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
}

const dir = mkdtempSync(join(tmpdir(), 'boxwatch-bench-metrics-'));
let now = T0;
const clock = { now: () => now, sleep: () => Promise.resolve() };
const store = openStore(join(dir, 'bench.db'), { clock });
const metrics = createMetrics({ clock });
const snapshot = fleetSnapshot(store);
metrics.setBoxesProvider(() => snapshot.boxes());
const server = await startHttpServer({ listen: '127.0.0.1:0', store, snapshot, metrics, clock, health: { maxCycleAgeMs: 90_000 }, logger: silentLogger });
const get = async (path: string): Promise<number> => (await (await fetch(`${server.url}${path}`)).text()).length;
const prepare: number[] = [];
const server_: number[] = [];
const firstWall: number[] = [];
const laterWall: number[] = [];
const concurrentWall: number[] = [];
const apiFirst: number[] = [];
const apiLater: number[] = [];
let bytes = 0;
try {
  // A daemon Prometheus scrapes: its metrics render the fleet right after each cycle only once
  // /metrics has been read (src/metrics.ts), so one scrape comes before the first cycle.
  await metrics.text();
  for (let i = 0; i < cycles; i++) {
    // What the daemon does after a cycle: publish the boxes it read, render the fleet once.
    now += 30_000;
    store.recordCycle(cycle(now, i));
    snapshot.publish(now, ['default'], store.boxes());
    prepare.push(await cpu(() => metrics.prepare()));
    now += 1_000;
    for (let k = 0; k < 5; k++) server_.push(await cpu(() => metrics.text()));
    const [size, wall] = await timed(() => get('/metrics'));
    bytes = size;
    firstWall.push(wall);
    for (let k = 0; k < 5; k++) laterWall.push((await timed(() => get('/metrics')))[1]);
    concurrentWall.push((await timed(() => Promise.all(Array.from({ length: 8 }, () => get('/metrics')))))[1]);
    apiFirst.push((await timed(() => get('/api/boxes')))[1]);
    for (let k = 0; k < 5; k++) apiLater.push((await timed(() => get('/api/boxes')))[1]);
  }
  // Reference: no snapshot, the fleet read from the store and rendered at every scrape.
  const plain = createMetrics({ clock });
  plain.setBoxesProvider(() => store.boxes());
  const uncached: number[] = [];
  for (let k = 0; k < 5; k++) uncached.push(await cpu(() => plain.text()));

  console.log(`${boxes} boxes, ${cycles} cycles, /metrics ${(bytes / 1024).toFixed(0)} KiB; medians (the machine is shared: noisy)`);
  console.log(`  after each cycle, rendering the fleet once (metrics.prepare()), CPU: ${ms(median(prepare))} (max ${ms(Math.max(...prepare))})`);
  console.log(`  /metrics server time per scrape (metrics.text()), CPU: ${ms(median(server_))} (max ${ms(Math.max(...server_))})`);
  console.log(`  /metrics HTTP wall: first after a cycle ${ms(median(firstWall))}, later ${ms(median(laterWall))}, 8 concurrent scrapes together ${ms(median(concurrentWall))}`);
  console.log(`  /api/boxes HTTP wall: first after a cycle (renders the JSON) ${ms(median(apiFirst))}, later ${ms(median(apiLater))}`);
  console.log(`  reference without the snapshot (fleet read and rendered at every scrape): ${ms(median(uncached))} CPU per scrape`);
} finally {
  await server.close();
  store.close();
  rmSync(dir, { recursive: true, force: true });
}
