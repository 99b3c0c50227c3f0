/**
 * A cycle does not rewrite the `boxes` row of every box it lists: a box whose values are those
 * its row holds is left as it is, and its last poll is its account's latest cycle while its
 * segment is open (docs/storage.md). What every reader sees stays the same: `boxwatch status`
 * (another connection next to the daemon) shows each cycle's last poll and a value that changed
 * after cycles without change; the stable view v_boxes says the same; a failed cycle leaves the
 * last poll at the last cycle that listed the box; retention keeps the cycle that a last poll is;
 * and a database written before this change (every row rewritten at every cycle, dumped in
 * fixtures/before-0018.sql by that version, with what it read back) reads the same and goes on.
 *
 * Real SQLite files; the writes to `boxes` are counted by a trigger put in by another connection.
 */
import Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { runCommand } from '../helpers/cli.js';
import { cycle, MAX_GAP, readBack, scenario, snap, T0, type ReadBack } from './fixtures/before-0018-scenario.mjs';
import { tempDir } from './model.js';

const MINUTE = 60_000;
const fixture = (name: string): string => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

/** Runs `fn` on a connection of its own to the file (as another process would). */
function other<T>(path: string, fn: (db: Database.Database) => T): T {
  const db = new Database(path);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** `boxwatch status --format json` on the file: each box's last poll and battery, by serial. */
async function status(path: string): Promise<Record<string, { lastPolled: string; battery: number | null }>> {
  const r = await runCommand(['status', '--db', path, '--format', 'json']);
  expect(r.err).toBe('');
  const boxes = JSON.parse(r.out) as { serial: string; lastPolled: string; battery: number | null }[];
  return Object.fromEntries(boxes.map((b) => [b.serial, { lastPolled: b.lastPolled, battery: b.battery }]));
}

/** The stable view's last poll of each box. */
const viewLastPolled = (path: string): Record<string, number> =>
  Object.fromEntries(other(path, (db) => db.prepare('SELECT serial, last_polled FROM v_boxes').raw().all() as [string, number][]));

const iso = (t: number): string => new Date(t).toISOString();

describe('boxes a cycle lists unchanged', () => {
  let path: string;
  let store: SqliteStore;
  beforeEach(() => {
    path = join(tmp.dir, 'boxwatch.db');
    store = openStore(path, { maxGapMs: MAX_GAP });
    other(path, (db) =>
      db.exec(`CREATE TABLE box_writes (serial TEXT);
        CREATE TRIGGER box_updated AFTER UPDATE ON boxes BEGIN INSERT INTO box_writes VALUES (new.serial); END;`),
    );
  });
  afterEach(() => store.close());

  /** The box rows updated since the last call, by serial. */
  const newWrites = (): string[] =>
    other(path, (db) => {
      const rows = db.prepare('SELECT serial FROM box_writes ORDER BY rowid').pluck().all() as string[];
      db.exec('DELETE FROM box_writes');
      return rows;
    });

  it('are not written again, yet status and v_boxes show every cycle as their last poll, and a change after unchanged cycles', async () => {
    for (let i = 0; i < 6; i++) {
      const t = T0 + i * MINUTE;
      store.recordCycle(cycle(t, 'default', 'ok', [snap('BX-1'), snap('BX-2', { battery: i < 4 ? 80 : 55 })]));
      // The first cycle writes both rows; then only BX-2's, once, when its battery changed.
      expect(newWrites()).toEqual(i === 0 ? ['BX-1', 'BX-2'] : i === 4 ? ['BX-2'] : []);
      expect(await status(path)).toEqual({
        'BX-1': { lastPolled: iso(t), battery: 80 },
        'BX-2': { lastPolled: iso(t), battery: i < 4 ? 80 : 55 },
      });
      expect(viewLastPolled(path)).toEqual({ 'BX-1': t, 'BX-2': t });
    }
  });

  it('a failed cycle leaves the last poll at the last cycle that listed the box, also after a restart; the next poll moves it again', async () => {
    for (let i = 0; i < 3; i++) store.recordCycle(cycle(T0 + i * MINUTE, 'default', 'ok', [snap('BX-1')]));
    store.recordCycle(cycle(T0 + 3 * MINUTE, 'default', 'failed'));
    expect((await status(path))['BX-1']?.lastPolled).toBe(iso(T0 + 2 * MINUTE));
    store.close();
    store = openStore(path, { maxGapMs: MAX_GAP });
    expect(store.boxes().map((b) => b.lastPolled)).toEqual([T0 + 2 * MINUTE]);
    expect(viewLastPolled(path)).toEqual({ 'BX-1': T0 + 2 * MINUTE });
    store.recordCycle(cycle(T0 + 4 * MINUTE, 'default', 'ok', [snap('BX-1')]));
    store.recordCycle(cycle(T0 + 5 * MINUTE, 'default', 'ok', [snap('BX-1')]));
    expect((await status(path))['BX-1']?.lastPolled).toBe(iso(T0 + 5 * MINUTE));
  });

  it('retention keeps each account’s latest cycle: the last poll of a box whose account is no longer polled stays what it was', async () => {
    scenario(store); // acme's last cycle is at 09:59:30, then only "default" is polled
    const lastOfAcme = T0 + 9 * MINUTE + MINUTE / 2;
    expect(store.boxes().find((b) => b.serial === 'acme/BX-9')?.lastPolled).toBe(lastOfAcme);
    // Long after: every cycle is past the raw retention.
    const later = T0 + 30 * 24 * 60 * MINUTE;
    store.prune(later, { rawMs: 24 * 60 * MINUTE, rollupMs: 7 * 24 * 60 * MINUTE });
    const cycles = other(path, (db) => db.prepare('SELECT account, started_at FROM cycles ORDER BY started_at').raw().all());
    expect(cycles).toEqual([
      ['acme', lastOfAcme],
      ['default', T0 + 14 * MINUTE],
    ]);
    store.close();
    store = openStore(path, { maxGapMs: MAX_GAP });
    expect(Object.fromEntries(store.boxes().map((b) => [b.serial, b.lastPolled]))).toEqual({
      'BX-1': T0 + 14 * MINUTE,
      'BX-2': T0 + 14 * MINUTE,
      'BX-3': T0 + 7 * MINUTE,
      'acme/BX-9': lastOfAcme,
    });
  });
});

describe('a database written before boxes were left unwritten (schema 17 and earlier)', () => {
  it('reads as that version read it, in the store and in v_boxes, and polling goes on as on a database written today', async () => {
    const path = join(tmp.dir, 'before.db');
    other(path, (db) => db.exec(fixture('before-0018.sql')));
    const expected = JSON.parse(fixture('before-0018.json')) as ReadBack;
    const store = openStore(path, { maxGapMs: MAX_GAP }); // applies migration 0018
    try {
      expect(JSON.parse(JSON.stringify(await readBack(store)))).toEqual(expected);
      expect(viewLastPolled(path)).toEqual(Object.fromEntries(expected.boxes.map((b) => [b.serial, b.lastPolled])));

      // The same cycles recorded by today's code from the start, then three more on both.
      const today = openStore(join(tmp.dir, 'today.db'), { maxGapMs: MAX_GAP });
      try {
        scenario(today);
        for (let i = 15; i < 18; i++) {
          const write = cycle(T0 + i * MINUTE, 'default', 'ok', [snap('BX-1'), snap('BX-2', { battery: 75 })], ['BX-3']);
          store.recordCycle(write);
          today.recordCycle(write);
        }
        expect(await readBack(store)).toEqual(await readBack(today));
        expect(store.boxes().find((b) => b.serial === 'BX-1')?.lastPolled).toBe(T0 + 17 * MINUTE);
      } finally {
        today.close();
      }
    } finally {
      store.close();
    }
  });
});
