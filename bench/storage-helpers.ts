/**
 * Helpers shared by the storage benchmarks: a poller stand-in that turns the simulator's fleet
 * model into the snapshots a poll cycle would record (details every 5 minutes per box, spread
 * over the ticks), and figures formatting.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { BoxSnapshot } from '../src/domain/model.js';
import { Fleet } from '../src/sim/fleet.js';
import type { CycleWrite } from '../src/domain/store.js';

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;
export const POLL_MS = 30_000;
/** Details refresh: every box once per this many cycles (5 minutes at 30 s). */
export const DETAILS_EVERY = 10;

/** Feeds cycles from the simulator's fleet model, as the poller would record them. */
export class FleetFeed {
  readonly fleet: Fleet;
  private readonly known = new Map<string, BoxSnapshot>();
  private k = 0;

  constructor(devices: number, start: number, seed = 1) {
    this.fleet = new Fleet({ devices, seed, start });
  }

  /** The cycle at time t: the fleet advanced, summaries for all, details for a tenth of the boxes. */
  cycle(t: number): CycleWrite {
    this.fleet.advanceTo(t);
    const seen: BoxSnapshot[] = [];
    let details = 0;
    const boxes = this.fleet.boxes;
    for (let i = 0; i < boxes.length; i++) {
      const box = boxes[i];
      if (box === undefined) continue;
      const s = this.fleet.summary(box);
      const prev = this.known.get(s.serial_no);
      const fetch = prev === undefined || (this.k + i) % DETAILS_EVERY === 0 || prev.connected !== s.connected || prev.firmware !== s.firmware_version;
      const d = fetch ? this.fleet.details(box) : undefined;
      if (fetch) details += 1;
      const snap: BoxSnapshot = {
        serial: s.serial_no,
        id: s.id,
        name: s.device_name,
        connected: s.connected,
        battery: s.battery_level,
        signal: d !== undefined ? d.signal_strength : (prev?.signal ?? null),
        firmware: s.firmware_version,
        lastSeen: Date.parse(s.last_seen),
        registeredAt: d !== undefined ? Date.parse(d.registered_at) : (prev?.registeredAt ?? null),
        location: d !== undefined ? d.location : (prev?.location ?? null),
        ip: d !== undefined ? d.ip_address : (prev?.ip ?? null),
        detailsAt: d !== undefined ? t : (prev?.detailsAt ?? null),
      };
      this.known.set(snap.serial, snap);
      seen.push(snap);
    }
    this.k += 1;
    return {
      cycle: { startedAt: t, durationMs: 200, requests: 1 + details, outcome: 'ok', errorCode: null, error: null, boxes: seen.length, detailsFetched: details },
      seen,
      missing: [],
    };
  }
}

export function tempDb(name: string): { path: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-bench-'));
  return { path: join(dir, name), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function ms(x: number): string {
  return `${x.toFixed(x < 10 ? 2 : 1)} ms`;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}

export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))] ?? NaN;
}

/** Bytes per table (b-tree) after VACUUM, from SQLite's dbstat. */
export function tableBytes(db: { prepare: (sql: string) => { all: () => unknown[] } }): Map<string, number> {
  const rows = db.prepare('SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name').all() as { name: string; bytes: number }[];
  return new Map(rows.map((r) => [r.name, r.bytes]));
}

/** A seeded generator (mulberry32, the seed as is): the query benches pick the same boxes from one seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** One statement on a connection of its own (bench set-up and sizes). */
export async function pgQuery<R extends object>(url: string, sql: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(sql)).rows;
  } finally {
    await client.end();
  }
}
