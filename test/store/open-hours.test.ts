/**
 * The open hours (src/store/history/retention.ts, `openHoursOf`) are one definition for retention
 * and the writer's load: those of the accounts still polled, each account its own. Uptime reads a
 * box's hours raw from its account's latest cycle's hour on (`lastHoursOf`), so an account removed
 * has its boxes' last hour read raw (or its rollup), not every hour since for the whole fleet. An account removed from the
 * configuration long ago (its latest cycle older than the raw retention) holds none of them back.
 * Before, retention let its raw rows go while the writer, at every start, loaded every sample row
 * back to its last cycle's hour, and uptime read every hour since from the sample rows (the whole
 * raw retention's worth of them, forever after an account was removed). A real SQLite file; the
 * sample rows read are counted on the real statements (better-sqlite3's Statement).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, expect, it, vi } from 'vitest';
import { openStore, pruneGradually, type SqliteStore } from '../../src/store/index.js';
import { parseConfig } from '../../src/config/index.js';
import { DEFAULT_RAW_RETENTION_MS } from '../../src/store/history/retention.js';
import type { UptimeRow } from '../../src/domain/store.js';
import { HOUR, MINUTE, okCycle, snap } from './model.js';

const DAY = 24 * HOUR;
const T0 = Date.parse('2026-03-01T10:00:00Z');
let dir: string | undefined;
let store: SqliteStore | undefined;
const stores: SqliteStore[] = [];
const BOXES = Array.from({ length: 40 }, (_, i) => `BX-${String(i).padStart(3, '0')}`);
afterEach(() => {
  vi.restoreAllMocks();
  store?.close();
  store = undefined;
  for (const s of stores.splice(0)) s.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** Counts the rows of `samples` that statements return from now on (all and get). */
function countSampleRows(): { rows: number } {
  const probe = new Database(':memory:');
  const statement = Object.getPrototypeOf(probe.prepare('SELECT 1')) as { all: (...args: unknown[]) => unknown[] };
  probe.close();
  const counted = { rows: 0 };
  const all = statement.all;
  vi.spyOn(statement, 'all').mockImplementation(function (this: { source: string }, ...args: unknown[]) {
    const rows = all.apply(this, args);
    if (/FROM samples\b/.test(this.source)) counted.rows += rows.length;
    return rows;
  });
  // One row at a time too (a box's row of one hour).
  const get = (statement as unknown as { get: (...args: unknown[]) => unknown }).get;
  vi.spyOn(statement as unknown as { get: (...args: unknown[]) => unknown }, 'get').mockImplementation(function (this: { source: string }, ...args: unknown[]) {
    const row = get.apply(this, args);
    if (/FROM samples\b/.test(this.source) && row !== undefined) counted.rows += 1;
    return row;
  });
  return counted;
}

it('an account removed long ago holds no open hour: a restart loads the open hour’s rows only, uptime reads the closed hours from their rollups', async () => {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-open-hours-'));
  const path = join(dir, 'boxwatch.db');
  const rawRetentionMs = 3 * DAY;
  store = openStore(path, { rawRetentionMs });
  const acme = okCycle(T0, [snap('acme/BX-9')]);
  store.recordCycle({ ...acme, cycle: { ...acme.cycle, account: 'acme' } }); // then acme leaves the configuration
  let last = T0;
  for (let t = T0 + HOUR; t <= T0 + 20 * DAY; t += 10 * 60_000) store.recordCycle(okCycle((last = t), [snap('BX-1', { connected: Math.floor(t / HOUR) % 4 !== 0 })]));
  await pruneGradually(store, last + 60_000, { rawMs: rawRetentionMs, rollupMs: 30 * DAY });
  const range = [last - 2 * DAY, last] as const;
  const expected = store.uptime(...range);
  expect(expected[0]).toMatchObject({ serial: 'BX-1', connectedFraction: 0.75 });

  // A restart: the writer loads the rows of the open hour (one row: BX-1's), not three days of them.
  store.close();
  const read = countSampleRows();
  store = openStore(path, { rawRetentionMs });
  store.recordCycle(okCycle(last + 10 * 60_000, [snap('BX-1')]));
  expect(read.rows).toBeLessThanOrEqual(1);

  // Uptime over two days reads the partial first hour and the open hour raw, the rest from rollups; the same answer.
  read.rows = 0;
  expect(store.uptime(...range)).toEqual(expected);
  expect(read.rows).toBeLessThanOrEqual(3);
});

it('an account removed within the raw retention: the other accounts’ uptime reads only their own open hour raw, the removed account’s boxes their last hour', () => {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-open-hours-'));
  // The same fleet polled every 10 minutes for two days, once alone and once after acme (polled once at T0) left the configuration.
  const fleet = (name: string, withAcme: boolean): { store: SqliteStore; last: number } => {
    const s = openStore(join(dir as string, name));
    stores.push(s);
    if (withAcme) {
      const acme = okCycle(T0, [snap('acme/BX-9')]);
      s.recordCycle({ ...acme, cycle: { ...acme.cycle, account: 'acme' } });
    }
    let last = T0;
    for (let t = T0 + HOUR; t <= T0 + 2 * DAY; t += 10 * MINUTE) s.recordCycle(okCycle((last = t), BOXES.map((serial, i) => snap(serial, { connected: (Math.floor(t / (10 * MINUTE)) + i) % 5 !== 0 }))));
    return { store: s, last };
  };
  const plain = fleet('plain.db', false);
  const removed = fleet('removed.db', true);
  const read = countSampleRows();
  const measured = (s: SqliteStore, from: number, to: number): { rows: UptimeRow[]; read: number } => {
    read.rows = 0;
    const rows = s.uptime(from, to);
    return { rows, read: read.rows };
  };
  // The last day: the open hour (one row per box) and the partial first hour, as for the fleet alone (before: every hour since T0, every box).
  const day = [plain.last - DAY - 30 * MINUTE, plain.last + 5 * MINUTE] as const;
  const alone = measured(plain.store, ...day);
  const withRemoved = measured(removed.store, ...day);
  expect(alone.read).toBe(2 * BOXES.length);
  expect(withRemoved.read).toBe(alone.read);
  expect(withRemoved.rows.filter((r) => r.serial !== 'acme/BX-9')).toEqual(alone.rows);
  expect(alone.rows[0]?.connectedFraction).toBeCloseTo(0.8, 1);
  // A range with acme's last hour: its box is read from that hour's row (acme's one row more), observed from its poll for the longest gap.
  const all = [T0, plain.last + 5 * MINUTE] as const;
  const allAlone = measured(plain.store, ...all);
  const allWithRemoved = measured(removed.store, ...all);
  expect(allWithRemoved.read).toBe(allAlone.read + 1);
  expect(allWithRemoved.rows.filter((r) => r.serial !== 'acme/BX-9')).toEqual(allAlone.rows);
  expect(allWithRemoved.rows.find((r) => r.serial === 'acme/BX-9')).toMatchObject({ observedMs: 5 * MINUTE, connectedFraction: 1 });
});

it('an account removed within the raw retention: a restart loads the open hour’s rows and the removed account’s last hour, not every hour since for the whole fleet', () => {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-open-hours-'));
  const path = join(dir, 'boxwatch.db');
  store = openStore(path);
  const acme = okCycle(T0, [snap('acme/BX-9')]);
  store.recordCycle({ ...acme, cycle: { ...acme.cycle, account: 'acme' } }); // then acme leaves the configuration
  let last = T0;
  for (let t = T0 + HOUR; t <= T0 + 2 * DAY; t += 10 * MINUTE) store.recordCycle(okCycle((last = t), BOXES.map((serial) => snap(serial, { battery: Math.floor(t / HOUR) % 100 }))));
  const next = last + 10 * MINUTE;
  const before = store.uptime(T0, next);
  store.close();
  const read = countSampleRows();
  store = openStore(path);
  store.recordCycle(okCycle(next, BOXES.map((serial) => snap(serial, { battery: Math.floor(next / HOUR) % 100 }))));
  expect(read.rows).toBe(BOXES.length + 1); // each box's row of the open hour, acme's box's of its last hour (before: 1,921)
  // What was loaded is what the cycle needed: the history reads as if the daemon had not stopped.
  read.rows = 0;
  expect(store.uptime(T0, next)).toEqual(before);
  expect(store.valueAt('BX-000', 'battery', next)?.value).toBe(Math.floor(next / HOUR) % 100);
  expect(store.valueAt('acme/BX-9', 'battery', T0 + MINUTE)?.value).toBe(80);
});

it('a store told no raw retention takes the configuration’s default', () => {
  const config = parseConfig('gateway: { base_url: "http://127.0.0.1:9", secret_key: k }\n', {});
  expect(config.storage.rawRetention).toBe(DEFAULT_RAW_RETENTION_MS);
});
