/**
 * How the SQLite store lays its rows out: retention deletes whole hour rows of samples, rollups
 * and cycles, in batches. The behaviour every store shares (round trips, gaps, history, uptime,
 * the clock stepping back, reopening, forgotten boxes) is the contract suite,
 * test/contract/history.contract.ts, run against SQLite by test/contract/history.contract.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { openStore, pruneGradually, type SqliteStore } from '../../src/store/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { connectionOf } from '../helpers/sqlite.js';
import { HOUR, okCycle, snap, tempDir } from './model.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');
const DAY = 24 * HOUR;

let tmp: ReturnType<typeof tempDir>;
let path: string;
let store: SqliteStore;
beforeEach(() => {
  tmp = tempDir();
  path = join(tmp.dir, 'data', 'boxwatch.db');
  store = openStore(path, { clock: new FakeClock(T0) });
});
afterEach(() => {
  store.close();
  tmp.cleanup();
});

/** Polls every 30 s from `from` for `n` cycles, the boxes given by `seen(t, i)`. */
function poll(from: number, n: number, seen: (t: number, i: number) => ReturnType<typeof snap>[]): number {
  let t = from;
  for (let i = 0; i < n; i++, t += 30_000) store.recordCycle(okCycle(t, seen(t, i)));
  return t - 30_000;
}

describe('prune', () => {
  it('deletes raw samples past raw retention, rollups and cycles past rollup retention, in batches', async () => {
    const boxes = Array.from({ length: 10 }, (_, i) => snap(`BX-${i}`));
    const last = poll(T0, 3 * 24 * 120, () => boxes); // three days
    const db = new Database(path, { readonly: true });
    const count = (table: string): number => (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    expect(count('samples')).toBe(72 * 10);
    expect(count('rollups')).toBe(71 * 10);

    const deleted = store.prune(last, { rawMs: DAY, rollupMs: 2 * DAY }, { maxRows: 500 });
    expect(deleted).toBeGreaterThanOrEqual(500);
    expect(deleted).toBeLessThan(600);
    const rest = await pruneGradually(store, last, { rawMs: DAY, rollupMs: 2 * DAY }, { batch: 500 });
    // Raw: hours entirely older than a day go; rollups and cycles: older than two days.
    expect(count('samples')).toBe(25 * 10);
    expect(count('rollups')).toBe(48 * 10);
    expect(count('cycles')).toBe(2 * 24 * 120 + 1);
    expect(deleted + rest).toBe(47 * 10 + 23 * 10 + 24 * 120 - 1);
    expect(store.prune(last, { rawMs: DAY, rollupMs: 2 * DAY })).toBe(0);
    db.close();

    expect(store.valueAt('BX-1', 'battery', last - 2 * DAY)).toBeUndefined();
    expect(store.valueAt('BX-1', 'battery', last - 20 * HOUR)?.value).toBe(80);
    const h = store.history('BX-1', 'battery', last - 40 * HOUR, last);
    expect(h.kind).toBe('rollup');
    const up = store.uptime(last - 40 * HOUR, last);
    expect(up[0]?.connectedFraction).toBe(1);
  });
});

describe('prune: alert history', () => {
  it('delivered and dead outbox rows, transitions and ended silences past retention go in batches, yielding to the event loop between them', async () => {
    store.recordCycle(okCycle(T0, [snap('BX-1')]));
    const db = connectionOf(store);
    const old = T0 - 10 * DAY;
    db.transaction(() => {
      const outbox = db.prepare("INSERT INTO outbox (notifier, created_at, message, next_attempt_at, status, done_at) VALUES ('mail', ?, '{}', ?, ?, ?)");
      const transition = db.prepare(
        "INSERT INTO alert_transitions (key, rule, serial, severity, from_status, to_status, at) VALUES ('r', 'r', 'BX-1', 'warning', 'firing', 'resolved', ?)",
      );
      const silence = db.prepare("INSERT INTO silences (id, boxes, rules, starts_at, ends_at, comment, created_by, created_at) VALUES (?, '[\"BX-1\"]', NULL, ?, ?, 'old', NULL, ?)");
      for (let i = 0; i < 1_500; i++) outbox.run(old, old, i % 2 === 0 ? 'delivered' : 'dead', old);
      for (let i = 0; i < 1_500; i++) transition.run(old);
      for (let i = 0; i < 600; i++) silence.run(`s${i}`, old, old + 1, old);
      outbox.run(old, old, 'pending', null); // still waiting: kept, however old
    })();
    let turns = 0;
    let done = false;
    const turn = (): void => {
      turns += 1;
      if (!done) setImmediate(turn);
    };
    setImmediate(turn);
    const deleted = await pruneGradually(store, T0, { rawMs: DAY, rollupMs: 2 * DAY }, { batch: 500 });
    done = true;
    expect(deleted).toBe(1_500 + 1_500 + 600);
    expect(turns).toBeGreaterThanOrEqual(7); // the event loop ran between the batches
    const count = (table: string): number => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
    expect([count('outbox'), count('alert_transitions'), count('silences')]).toEqual([1, 0, 0]);
  });
});
