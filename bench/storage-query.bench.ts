/**
 * Query benchmark on a database holding 1,000 boxes × 90 days at a 30 s schedule: history of one
 * box over 24 h (raw) and over 90 days (rollups), uptime of all boxes over 30 days, valueAt.
 * The database is built directly (bench/history-db.ts), not through 260k recordCycle calls.
 *
 *   npm run build && node dist/bench/storage-query.bench.js [--boxes 1000] [--days 90]
 */
import { existsSync } from 'node:fs';
import { openStore } from '../src/store/index.js';
import { buildHistoryDb, serialOf } from './history-db.js';
import { DAY, median, ms, rng, tempDb } from './storage-helpers.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const BOXES = arg('boxes', 1000);
const DAYS = arg('days', 90);
const END = Date.parse('2026-06-01T00:00:00Z');
const START = END - DAYS * DAY;

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
  const built = buildHistoryDb(db.path, { boxes: BOXES, days: DAYS, end: END });
  console.log(`built in ${built.buildS.toFixed(1)} s: ${(built.bytes / 2 ** 20).toFixed(0)} MiB (${(built.bytes / BOXES / DAYS / 1024).toFixed(2)} KB per box per day)`);
}

const store = openStore(db.path);
const r = rng(7);
const pick = (): string => serialOf(1 + Math.floor(r() * BOXES));
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
