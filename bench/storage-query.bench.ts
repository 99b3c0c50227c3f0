/**
 * Query benchmark on a database holding 1,000 boxes × 90 days at a 30 s schedule: history of one
 * box over 24 h (raw) and over 90 days (rollups), uptime of all boxes over 30 days, valueAt.
 * The database is built directly, not through 260k recordCycle calls: for each box and hour a
 * seeded generator (drifting battery, signal refreshed every 5 minutes, rare disconnects, a
 * fleet-wide gateway outage now and then) produces the row with the store's own codec, and its
 * rollup with the same run statistics the store uses; rows go in with big transactions.
 *
 *   npm run build && node dist/bench/storage-query.bench.js [--boxes 1000] [--days 90]
 */
import Database from 'better-sqlite3';
import { existsSync, statSync } from 'node:fs';
import { HOUR_MS, SLOT, addObservation, emptyRow, encodeRow, rowRuns, runStats, type HourRow, type Values } from '../src/store/codec.js';
import { openStore } from '../src/store/index.js';
import { DAY, POLL_MS, median, ms, rng, tempDb } from './storage-helpers.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const BOXES = arg('boxes', 1000);
const DAYS = arg('days', 90);
const END = Date.parse('2026-06-01T00:00:00Z');
const START = END - DAYS * DAY;
const CYCLES_PER_HOUR = HOUR_MS / POLL_MS;

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
function genHour(g: BoxGen, box: number, hourStart: number, outageSlot: number | undefined): HourRow {
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
  void hourStart;
  return row;
}

function build(path: string): { buildS: number; bytes: number } {
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
        const row = genHour(gens[b - 1] as BoxGen, b, hour * HOUR_MS, slot);
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
      insBox.run(b, `BX-${String(b).padStart(5, '0')}`, 1000 + b, `Box ${b}`, g.connected ? 1 : 0, g.values?.[0] ?? null, g.signal, last, START - DAY, last, START, last);
    }
  })();
  db.close();
  return { buildS: (performance.now() - began) / 1000, bytes: statSync(path).size };
}

function time<T>(fn: () => T): { ms: number; result: T } {
  const t0 = performance.now();
  const result = fn();
  return { ms: performance.now() - t0, result };
}

/** `--db FILE` keeps the built database there and reuses it on the next run. */
const dbArg = process.argv.indexOf('--db');
const db = dbArg >= 0 ? { path: process.argv[dbArg + 1] as string, cleanup: () => undefined } : tempDb('query.db');
console.log(`\n### queries on ${BOXES} boxes × ${DAYS} days (30 s schedule), database built directly`);
if (!existsSync(db.path)) {
  const built = build(db.path);
  console.log(`built in ${built.buildS.toFixed(1)} s: ${(built.bytes / 2 ** 20).toFixed(0)} MiB (${(built.bytes / BOXES / DAYS / 1024).toFixed(2)} KB per box per day)`);
}

const store = openStore(db.path);
const r = rng(7);
const pick = (): string => `BX-${String(1 + Math.floor(r() * BOXES)).padStart(5, '0')}`;
const first = time(() => store.history(pick(), 'signal', END - DAY, END));
const h24: number[] = [];
const h90: number[] = [];
const c24: number[] = [];
let points24 = 0;
let points90 = 0;
for (let i = 0; i < 30; i++) {
  const a = time(() => store.history(pick(), 'signal', END - DAY, END));
  h24.push(a.ms);
  points24 = a.result.points.length;
  const b = time(() => store.history(pick(), 'battery', START, END));
  h90.push(b.ms);
  points90 = b.result.points.length;
  c24.push(time(() => store.history(pick(), 'connected', END - DAY, END)).ms);
}
const up: number[] = [];
let upRows = 0;
for (let i = 0; i < 5; i++) {
  const u = time(() => store.uptime(END - 30 * DAY - 17 * 60_000, END));
  up.push(u.ms);
  upRows = u.result.length;
}
const va: number[] = [];
for (let i = 0; i < 200; i++) va.push(time(() => store.valueAt(pick(), 'battery', START + Math.floor(r() * (END - START)))).ms);
store.close();
console.log(`history 24 h, signal (raw, ${points24} points): median ${ms(median(h24))}, max ${ms(Math.max(...h24))} (first query after open ${ms(first.ms)})`);
console.log(`history 24 h, connected (raw): median ${ms(median(c24))}`);
console.log(`history ${DAYS} d, battery (rollups, ${points90} points): median ${ms(median(h90))}, max ${ms(Math.max(...h90))}`);
console.log(`uptime 30 d, all ${upRows} boxes: median ${ms(median(up))}, max ${ms(Math.max(...up))}`);
console.log(`valueAt at a random time in ${DAYS} days: median ${ms(median(va))}`);
db.cleanup();
