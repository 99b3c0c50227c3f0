/**
 * The open hours (src/store/history/retention.ts, `openHourOf`) are one definition for retention,
 * the writer's load and uptime: those of the accounts still polled. An account removed from the
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
import { HOUR, okCycle, snap } from './model.js';

const DAY = 24 * HOUR;
const T0 = Date.parse('2026-03-01T10:00:00Z');
let dir: string | undefined;
let store: SqliteStore | undefined;
afterEach(() => {
  vi.restoreAllMocks();
  store?.close();
  store = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** Counts the rows of `samples` that statements return from now on. */
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

it('a store told no raw retention takes the configuration’s default', () => {
  const config = parseConfig('gateway: { base_url: "http://127.0.0.1:9", secret_key: k }\n', {});
  expect(config.storage.rawRetention).toBe(DEFAULT_RAW_RETENTION_MS);
});
