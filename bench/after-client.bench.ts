/**
 * boxwatch's poll cycle AFTER the gateway client, against the floor's work after its requests:
 * the cycle's own stages (choosing the details, merging the snapshots, the history writer and its
 * SQLite statements, the rules and the alert engine, the app's per-cycle glue) without HTTP, so
 * that their CPU and the garbage they leave can be told apart from the client's
 * (bench/floor.bench.ts measures whole cycles, client included, where these stages are about a
 * quarter of boxwatch's CPU).
 *
 * Both sides run in this process on the simulator's fleet model (src/sim/fleet.ts) and a fake
 * clock stepped one schedule interval (5 s, issue 14's) per cycle, so that the model's 10 s tick
 * moves every connected box's last_seen every other cycle, as in the paced floor bench:
 * - boxwatch: `app.runOnce()` with a gateway client answering from the model: the device list as
 *   `JSON.parse` of the model's list body, the details as fresh objects (what the real client hands
 *   on, without its HTTP and validation);
 * - the floor: `JSON.parse` of the same list body, the details the same way, and one SQLite
 *   transaction inserting a row per box (the floor bench's NaivePoller after its requests).
 * The sides run one after the other (warm-up cycles, then the measured ones), not interleaved,
 * so that the garbage collection each side's cycles cause falls in its own phase; V8's collections
 * in each phase are counted (PerformanceObserver). The CPU counted is the cycles' work alone: the
 * model's step between cycles (the simulator's work, about 8 ms a cycle at 10,000 boxes) is not.
 *
 *   npm run build && node --expose-gc dist/bench/after-client.bench.js [--boxes 10000] [--cycles 40]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PerformanceObserver, constants, type NodeGCPerformanceDetail, type PerformanceEntry } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { createApp } from '../src/app.js';
import type { Clock } from '../src/clock.js';
import { validateConfig } from '../src/config/index.js';
import type { GatewayClient } from '../src/gateway/types.js';
import type { DeviceSummary } from '../src/gateway/schemas.js';
import { silentLogger } from '../src/log.js';
import { Fleet } from '../src/sim/fleet.js';

const INTERVAL_MS = 5_000;
const WARM_UP = 6;

const { values } = parseArgs({ options: { boxes: { type: 'string', default: '10000' }, cycles: { type: 'string', default: '40' } } });
const boxes = Number(values.boxes);
const cycles = Number(values.cycles);

/** CPU of this process (ms, all threads: V8's parallel scavenges included). */
const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/**
 * `cycles` cycles of `work`, each after a `tick()` of the model (the simulator's work, not
 * measured): the CPU of the work alone, and V8's collections meanwhile (count and time of the
 * young-generation ones, scavenges, and of the others; those of the ticks included).
 */
async function phase(work: () => Promise<void> | void): Promise<{ cpuMs: number; scavenges: number; scavengeMs: number; fullGcs: number; fullGcMs: number }> {
  const gc = { scavenges: 0, scavengeMs: 0, fullGcs: 0, fullGcMs: 0 };
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const minor = (entry as PerformanceEntry & { detail?: NodeGCPerformanceDetail }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR;
      if (minor) {
        gc.scavenges += 1;
        gc.scavengeMs += entry.duration;
      } else {
        gc.fullGcs += 1;
        gc.fullGcMs += entry.duration;
      }
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  let used = 0;
  for (let i = 0; i < cycles; i++) {
    tick();
    const c0 = cpuMs();
    await work();
    used += cpuMs() - c0;
  }
  await new Promise((resolve) => setTimeout(resolve, 100)); // the observer is told of collections later, on a timer
  observer.disconnect();
  return { cpuMs: used, ...gc };
}

const start = Date.UTC(2026, 10, 24, 9, 0, 0);
let now = start;
/** The fake clock: moved by this bench only; a sleep (the cycle's deadline) never ends unless aborted. */
const clock: Clock = {
  now: () => now,
  sleep: (_ms, signal) =>
    new Promise((_resolve, reject) => {
      signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
    }),
};
const fleet = new Fleet({ devices: boxes, seed: 42, start });
const listOf = (): DeviceSummary[] => (JSON.parse(fleet.deviceListBody()) as { data: DeviceSummary[] }).data;
const detailsOf = (serial: string): ReturnType<Fleet['details']> => {
  const box = fleet.getListed(serial);
  if (box === undefined) throw new Error(`no box ${serial}`);
  return fleet.details(box);
};
const unused = (): Promise<never> => Promise.reject(new Error('not used by this bench'));
const client: GatewayClient = {
  listDevices: () => Promise.resolve({ devices: listOf(), rejected: [], serverTime: now }),
  getDevice: (serial) => Promise.resolve(detailsOf(serial)),
  listCalls: unused,
  getCall: unused,
  makeCall: unused,
  close: () => Promise.resolve(),
};
/** One schedule interval later: the model moved on and its list body is built (the simulator's work: outside the measured CPU, see `phase`). */
const tick = (): void => {
  now += INTERVAL_MS;
  fleet.advanceTo(now);
  fleet.deviceListBody();
};

const dir = mkdtempSync(join(tmpdir(), 'boxwatch-bench-after-client-'));
try {
  const config = validateConfig(
    {
      gateway: { base_url: 'http://127.0.0.1:9', secret_key: 'bench', concurrency: 16 },
      poll: { schedule: '*/5 * * * * *', details_every: '50s' },
      storage: { path: join(dir, 'boxwatch.db') },
      notifiers: [],
      http: false,
    },
    {},
    'after-client bench configuration',
  );
  const app = createApp({ config, logger: silentLogger, client, clock, notifiers: [] });
  const details: number[] = [];
  const cycle = async (): Promise<void> => {
    const result = await app.runOnce();
    if (result?.cycle.outcome !== 'ok') throw new Error(`boxwatch cycle failed: ${result?.cycle.error ?? 'skipped'}`);
    details.push(result.cycle.detailsFetched);
  };
  for (let i = 0; i < WARM_UP; i++) {
    tick();
    await cycle();
  }
  details.length = 0;
  const ours = await phase(cycle);
  await app.stop();

  // The floor after its requests: the same answers, one transaction of one row per box.
  const db = new Database(join(dir, 'floor.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('CREATE TABLE samples (t INTEGER, serial TEXT, connected INTEGER, battery INTEGER, signal INTEGER, last_seen TEXT)');
  const insert = db.prepare('INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?)');
  let k = 0;
  const floorCycle = (): void => {
    const list = listOf();
    const byDetails = new Map<string, { signal_strength: number }>();
    const due = Math.round(details.reduce((a, b) => a + b, 0) / details.length); // as many details as boxwatch's cycles fetched
    for (let i = 0; i < due; i++) {
      const s = list[(k++ * 7) % list.length] as DeviceSummary;
      byDetails.set(s.serial_no, detailsOf(s.serial_no));
    }
    const t = clock.now();
    db.transaction(() => {
      for (const b of list) insert.run(t, b.serial_no, b.connected ? 1 : 0, b.battery_level, byDetails.get(b.serial_no)?.signal_strength ?? null, b.last_seen);
    })();
  };
  for (let i = 0; i < WARM_UP; i++) {
    tick();
    floorCycle();
  }
  const floor = await phase(floorCycle);
  db.close();

  const per = (x: number): string => (x / cycles).toFixed(1);
  const gcText = (p: typeof ours): string =>
    `${per(p.scavenges)} scavenges (${per(p.scavengeMs)} ms), ${per(p.fullGcs)} other collections (${per(p.fullGcMs)} ms)`;
  const meanDetails = details.reduce((a, b) => a + b, 0) / details.length;
  console.log(
    `${boxes.toLocaleString('en')} boxes, ${cycles} cycles ${INTERVAL_MS / 1000} s apart on a fake clock, ${meanDetails.toFixed(0)} details a cycle | ` +
      `boxwatch after the client ${per(ours.cpuMs)} ms CPU per cycle (GC per cycle: ${gcText(ours)}) | ` +
      `floor after its requests ${per(floor.cpuMs)} ms (GC per cycle: ${gcText(floor)}) | ratio ${(ours.cpuMs / floor.cpuMs).toFixed(2)}x`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
