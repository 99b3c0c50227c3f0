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
import type { BoxState, CycleWrite } from '../../src/domain/store.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { connectionOf } from '../helpers/sqlite.js';
import { HOUR, failedCycle, okCycle, snap, tempDir } from './model.js';

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

describe('boxes: the fleet the writer holds in memory', () => {
  /** What a fresh connection reads from the table: the answer boxes() must give. */
  const stored = (): BoxState[] => {
    const reader = openStore(path, { readonly: true });
    try {
      return reader.boxes();
    } finally {
      reader.close();
    }
  };
  /** Commits a cycle as the daemon does, forgetting `forget`; returns the fleet its alert stage was given. */
  const commit = (write: CycleWrite, forget: string[] = []): BoxState[] => {
    let fleet: BoxState[] = [];
    store.commitCycle(write, write.cycle.startedAt, (view) => {
      fleet = [...view.boxes];
      return { alerts: { states: view.states, dropped: [], transitions: [], queued: [], forget }, result: undefined };
    });
    return fleet;
  };
  /** A second read-write connection, as `boxwatch box forget` opens next to the daemon. */
  const otherConnection = <T>(fn: (other: SqliteStore) => T): T => {
    const other = openStore(path, { clock: new FakeClock(T0) });
    try {
      return fn(other);
    } finally {
      other.close();
    }
  };

  it('answers what the database holds after every cycle: new boxes in any order, changes, missing, forgotten and returning boxes, failed cycles', () => {
    const cycles = [
      okCycle(T0, [snap('BX-20'), snap('BX-03', { battery: 12 })]),
      okCycle(T0 + 30_000, [snap('BX-20', { connected: false, battery: null }), snap('BX-03'), snap('BX-ü1'), snap('BX-10', { detailsAt: T0 + 30_000, signal: -99 })]),
      okCycle(T0 + 60_000, [snap('BX-20'), snap('BX-ü1')], ['BX-03', 'BX-10']),
      failedCycle(T0 + 90_000),
      // Every column of a row changes at once (a cycle writes them in one UPDATE, argument by argument).
      okCycle(T0 + 120_000, [snap('BX-03', { id: 303, firmware: '3.5.0', name: 'Renamed "box"', battery: 41, signal: -88, lastSeen: T0 + 110_000, registeredAt: T0 - 1_000, location: 'Moved', ip: '10.9.9.9', detailsAt: T0 + 120_000 }), snap('BX-20'), snap('BX-01')], ['BX-10', 'BX-ü1']),
      okCycle(T0 + 150_000, [snap('BX-10'), snap('BX-01')], ['BX-03', 'BX-20', 'BX-ü1']),
    ];
    for (const write of cycles) {
      expect(commit(write)).toEqual(stored());
      expect(store.boxes()).toEqual(stored());
    }
    expect(store.boxes().map((b) => b.serial)).toEqual(['BX-01', 'BX-03', 'BX-10', 'BX-20', 'BX-ü1']);
    expect(store.boxes().find((b) => b.serial === 'BX-03')).toMatchObject({ missingSince: T0 + 150_000, name: 'Renamed "box"', firstSeen: T0 });
    expect(stored().find((b) => b.serial === 'BX-03')).toMatchObject({ id: 303, firmware: '3.5.0', battery: 41, signal: -88, lastSeen: T0 + 110_000, registeredAt: T0 - 1_000, location: 'Moved', ip: '10.9.9.9', detailsAt: T0 + 120_000 });

    // Forgotten by the cycle (forget_after): gone from the fleet at once and in the next cycles.
    expect(commit(okCycle(T0 + 180_000, [snap('BX-10'), snap('BX-01')], ['BX-03', 'BX-20', 'BX-ü1']), ['BX-ü1'])).toContainEqual(expect.objectContaining({ serial: 'BX-ü1' }));
    expect(store.boxes().map((b) => b.serial)).toEqual(['BX-01', 'BX-03', 'BX-10', 'BX-20']);
    expect(commit(okCycle(T0 + 210_000, [snap('BX-10'), snap('BX-01')], ['BX-03', 'BX-20', 'BX-ü1'])).map((b) => b.serial)).toEqual(['BX-01', 'BX-03', 'BX-10', 'BX-20']);
    expect(store.boxes()).toEqual(stored());
    // Listed again: back.
    expect(commit(okCycle(T0 + 240_000, [snap('BX-ü1', { battery: 3 }), snap('BX-01')], ['BX-03', 'BX-10', 'BX-20'])).map((b) => b.serial)).toContain('BX-ü1');
    expect(store.boxes()).toEqual(stored());
  });

  it('answers the database as it was when a cycle rolls back', () => {
    commit(okCycle(T0, [snap('BX-01'), snap('BX-02')]));
    const before = store.boxes();
    expect(() =>
      store.commitCycle(okCycle(T0 + 30_000, [snap('BX-01', { battery: 5 }), snap('BX-03')], ['BX-02']), T0 + 30_000, () => {
        throw new Error('the alert stage failed');
      }),
    ).toThrow('the alert stage failed');
    expect(store.boxes()).toEqual(before);
    expect(store.boxes()).toEqual(stored());
    commit(okCycle(T0 + 60_000, [snap('BX-01', { battery: 7 })], ['BX-02']));
    expect(store.boxes()).toEqual(stored());
  });

  it('a box forgotten by another connection (boxwatch box forget) leaves boxes() and the next cycles\' alert stage; a row changed there is seen', () => {
    commit(okCycle(T0, [snap('BX-01'), snap('BX-02'), snap('BX-03')]));
    commit(okCycle(T0 + 30_000, [snap('BX-01'), snap('BX-03')], ['BX-02']));
    expect(store.boxes().map((b) => b.serial)).toEqual(['BX-01', 'BX-02', 'BX-03']);

    expect(otherConnection((cli) => cli.forgetBoxes(['BX-02'], T0 + 40_000))).toBe(1);
    expect(store.boxes().map((b) => b.serial)).toEqual(['BX-01', 'BX-03']);
    for (let i = 2; i < 5; i++) expect(commit(okCycle(T0 + i * 30_000, [snap('BX-01'), snap('BX-03')], ['BX-02'])).map((b) => b.serial)).toEqual(['BX-01', 'BX-03']);
    expect(store.boxes()).toEqual(stored());

    // Any committed change of another connection is read again, not answered from memory.
    otherConnection((cli) => connectionOf(cli).prepare("UPDATE boxes SET name = 'changed elsewhere' WHERE serial = 'BX-03'").run());
    expect(store.boxes().find((b) => b.serial === 'BX-03')?.name).toBe('changed elsewhere');
    expect(commit(okCycle(T0 + 150_000, [snap('BX-01')], ['BX-02', 'BX-03'])).find((b) => b.serial === 'BX-03')).toMatchObject({ name: 'changed elsewhere', missingSince: T0 + 150_000 });
    expect(store.boxes()).toEqual(stored());
  });
});

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
