/**
 * A database of N boxes × D days at a 30 s schedule, built directly rather than through millions
 * of recordCycle calls (shared by storage-query.bench.ts and export.bench.ts): for each box and
 * hour a seeded generator (drifting battery, signal refreshed every 5 minutes, rare disconnects, a
 * fleet-wide gateway outage now and then) produces the row with the store's own codec, and its
 * rollup with the same run statistics the store uses; rows go in with big transactions (a day of
 * the whole fleet per transaction).
 */
import Database from 'better-sqlite3';
import { statSync } from 'node:fs';
import { HOUR_MS, SLOT, addObservation, emptyRow, encodeRow, rowRuns, runStats, type HourRow, type Values } from '../src/store/codec.js';
import { openStore } from '../src/store/index.js';
import { DAY, POLL_MS, rng } from './storage-helpers.js';

export const CYCLES_PER_HOUR = HOUR_MS / POLL_MS;

export interface HistoryDbSize {
  boxes: number;
  days: number;
  /** The end of the history (ms, on an hour); it starts `days` before. */
  end: number;
}

/** The serial of box b (1-based): BX-00001 ... */
export const serialOf = (b: number): string => `BX-${String(b).padStart(5, '0')}`;

/** Fleet-wide gateway outages: hour index -> failed cycle slot (the hour has a 30 s hole there). */
function outages(hours: number): Map<number, number> {
  const r = rng(99);
  const out = new Map<number, number>();
  for (let h = 0; h < hours; h++) if (r() < 1 / 72) out.set(h, Math.floor(r() * CYCLES_PER_HOUR));
  return out;
}

interface BoxGen {
  r: () => number;
  onMains: boolean;
  charge: number;
  signal: number;
  base: number;
  connected: boolean;
  values: Values | null;
}

/** One box's row for one hour: 120 polls, details every 10th (staggered by box). */
function genHour(g: BoxGen, box: number, outageSlot: number | undefined): HourRow {
  const row = emptyRow();
  for (let k = 0; k < CYCLES_PER_HOUR; k++) {
    if (k === outageSlot) continue;
    const r = g.r;
    if (g.onMains ? r() < 1 / 5760 : r() < 1 / 720) g.onMains = !g.onMains;
    g.charge = Math.min(100, Math.max(0, g.charge + (g.onMains ? 0.05 : -0.01)));
    if (g.connected ? r() < 1 / 5760 : r() < 1 / 16) g.connected = !g.connected;
    if ((k + box) % 10 === 0) g.signal = Math.round(Math.min(-45, Math.max(-125, g.signal + (g.base - g.signal) * 0.3 + (r() - 0.5) * 6)));
    const values: Values = [g.connected ? Math.round(g.charge) : null, g.signal, g.connected ? 1 : 0, 1];
    addObservation(row, k * POLL_MS, g.values, values);
    g.values = values;
  }
  row.pieces =
    outageSlot === undefined
      ? [{ start: 0, end: HOUR_MS }]
      : [
          { start: 0, end: outageSlot * POLL_MS },
          { start: (outageSlot + 1) * POLL_MS, end: HOUR_MS },
        ].filter((p) => p.end > p.start);
  return row;
}

/** Builds the database at `path` (which must not exist yet); its build time and bytes on disk. */
export function buildHistoryDb(path: string, size: HistoryDbSize): { buildS: number; bytes: number } {
  const { boxes: BOXES, days: DAYS, end: END } = size;
  const START = END - DAYS * DAY;
  const began = performance.now();
  openStore(path).close(); // schema
  const db = new Database(path);
  db.pragma('foreign_keys = OFF'); // boxes rows are written last, with their final state
  db.pragma('journal_mode = OFF');
  db.pragma('synchronous = OFF');
  db.pragma('cache_size = -524288');
  const hours = DAYS * 24;
  const firstHour = START / HOUR_MS;
  const out = outages(hours);
  db.prepare("INSERT INTO strings (id, value) VALUES (1, '3.4.2')").run();
  const insBox = db.prepare(
    `INSERT INTO boxes (id, serial, gateway_id, name, connected, battery, signal, firmware, last_seen, registered_at, location, ip, details_at, first_seen, last_polled, missing_since, seg_start)
     VALUES (?, ?, ?, ?, ?, ?, ?, '3.4.2', ?, ?, 'Lyon, Depot', '10.0.0.1', ?, ?, ?, NULL, NULL)`,
  );
  const insSample = db.prepare('INSERT INTO samples (hour, box_id, data) VALUES (?, ?, ?)');
  const insRollup = db.prepare(
    `INSERT INTO rollups (box_id, hour, polls, observed_ms, disconnected_ms, battery_gap_ms, battery_min, battery_max, battery_mean_milli,
       signal_gap_ms, signal_min, signal_max, signal_mean_milli) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insCycle = db.prepare("INSERT INTO cycles (started_at, duration_ms, requests, outcome, error_code, error, boxes, details_fetched) VALUES (?, 200, ?, ?, ?, NULL, ?, ?)");
  const gens: BoxGen[] = [];
  for (let b = 1; b <= BOXES; b++) {
    const r = rng(b);
    const base = Math.round(-78 + (r() - 0.5) * 30);
    gens.push({ r, onMains: r() < 0.8, charge: 40 + r() * 60, signal: base, base, connected: true, values: null });
  }
  const milli = (v: number | null): number | null => (v === null ? null : Math.round(v * 1000));
  // Hour-major: samples (keyed by hour first) go in in order; rollups land in per-box ranges.
  const chunk = db.transaction((h0: number, h1: number) => {
    for (let h = h0; h < h1; h++) {
      const hour = firstHour + h;
      const slot = out.get(h);
      for (let k = 0; k < CYCLES_PER_HOUR; k++) {
        const failed = k === slot;
        insCycle.run(hour * HOUR_MS + k * POLL_MS, failed ? 3 : 1 + BOXES / 10, failed ? 'failed' : 'ok', failed ? 'unavailable' : null, failed ? 0 : BOXES, failed ? 0 : BOXES / 10);
      }
      for (let b = 1; b <= BOXES; b++) {
        const row = genHour(gens[b - 1] as BoxGen, b, slot);
        insSample.run(hour, b, encodeRow(row));
        const t0 = hour * HOUR_MS;
        const conn = runStats(rowRuns(row, t0, SLOT.connected));
        const bat = runStats(rowRuns(row, t0, SLOT.battery));
        const sig = runStats(rowRuns(row, t0, SLOT.signal));
        const polls = slot === undefined ? CYCLES_PER_HOUR : CYCLES_PER_HOUR - 1;
        insRollup.run(b, hour, polls, conn.observedMs, conn.observedMs - conn.weighted, conn.observedMs - bat.valueMs, bat.min, bat.max,
          milli(bat.valueMs > 0 ? bat.weighted / bat.valueMs : null), conn.observedMs - sig.valueMs, sig.min, sig.max,
          milli(sig.valueMs > 0 ? sig.weighted / sig.valueMs : null));
      }
    }
  });
  for (let h = 0; h < hours; h += 24) chunk(h, Math.min(hours, h + 24));
  const last = END - POLL_MS;
  db.transaction(() => {
    for (let b = 1; b <= BOXES; b++) {
      const g = gens[b - 1] as BoxGen;
      insBox.run(b, serialOf(b), 1000 + b, `Box ${b}`, g.connected ? 1 : 0, g.values?.[0] ?? null, g.signal, last, START - DAY, last, START, last);
    }
  })();
  db.close();
  return { buildS: (performance.now() - began) / 1000, bytes: statSync(path).size };
}
