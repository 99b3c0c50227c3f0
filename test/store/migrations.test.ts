/**
 * Opening databases: fresh ones are created and migrated, existing ones get only the missing
 * migrations, and files boxwatch must not touch are refused with a typed error and left as found.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openStore } from '../../src/store/index.js';
import { APPLICATION_ID, defaultMigrationsDir } from '../../src/store/migrate.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { okCycle, snap, tempDir } from './model.js';
import { connectionOf } from '../helpers/sqlite.js';
import { lockFromAnotherProcess, openAtOnce } from '../helpers/sqlite-processes.js';
import { ensureBuilt } from '../e2e/build.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');
let tmp: ReturnType<typeof tempDir>;
let path: string;
beforeAll(ensureBuilt, 120_000);
beforeEach(() => {
  tmp = tempDir();
  path = join(tmp.dir, 'boxwatch.db');
});
afterEach(() => tmp.cleanup());

function inspect(file: string): { migrations: { name: string; applied_at: number }[]; tables: string[] } {
  const db = new Database(file, { readonly: true });
  try {
    return {
      migrations: db.prepare('SELECT name, applied_at FROM schema_migrations ORDER BY name').all() as { name: string; applied_at: number }[],
      tables: db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").pluck().all() as string[],
    };
  } finally {
    db.close();
  }
}

/** The names of the real migration files (other features add theirs). */
function realMigrations(): string[] {
  return readdirSync(defaultMigrationsDir())
    .filter((f) => /^\d{4}_.*\.sql$/.test(f))
    .sort()
    .map((f) => f.replace(/\.sql$/, ''));
}

/** A copy of the real migrations folder plus extra files. */
function migrationsWith(extra: Record<string, string>): string {
  const dir = join(tmp.dir, 'migrations');
  mkdirSync(dir);
  for (const f of readdirSync(defaultMigrationsDir()).filter((f) => f.endsWith('.sql'))) copyFileSync(join(defaultMigrationsDir(), f), join(dir, f));
  for (const [name, sql] of Object.entries(extra)) writeFileSync(join(dir, name), sql);
  return dir;
}

describe('migrations', () => {
  it('creates and migrates a new database (WAL, foreign keys, marked as boxwatch)', () => {
    const store = openStore(path, { clock: new FakeClock(T0) });
    expect(connectionOf(store).pragma('journal_mode', { simple: true })).toBe('wal');
    expect(connectionOf(store).pragma('foreign_keys', { simple: true })).toBe(1);
    expect(connectionOf(store).pragma('synchronous', { simple: true })).toBe(1); // NORMAL
    expect(connectionOf(store).pragma('application_id', { simple: true })).toBe(APPLICATION_ID);
    store.close();
    const { migrations, tables } = inspect(path);
    expect(realMigrations()[0]).toBe('0001_init');
    expect(migrations).toEqual(realMigrations().map((name) => ({ name, applied_at: T0 })));
    expect(tables).toEqual(expect.arrayContaining(['boxes', 'cycles', 'samples', 'rollups', 'schema_migrations']));
  });

  it('eight processes creating one new database at the same instant (replicas started together) all open it: fully migrated, each migration once, no backup written', async () => {
    // Five rounds, each on a new file: before the fix most rounds had a process take the
    // half-migrated file for an upgrade and write a backup (or two, colliding on one name, and
    // one of them exit), or fail with "database is locked" switching the new file to WAL.
    for (let round = 0; round < 5; round++) {
      const dir = join(tmp.dir, `round-${round}`);
      mkdirSync(dir);
      const file = join(dir, 'boxwatch.db');
      expect(await openAtOnce(file), `round ${round}`).toEqual(Array.from({ length: 8 }, () => 'ok'));
      expect(inspect(file).migrations.map((m) => m.name), `round ${round}`).toEqual(realMigrations());
      expect(readdirSync(dir).filter((f) => !/^boxwatch\.db(-wal|-shm)?$/.test(f)), `round ${round}: files beside the database`).toEqual([]);
    }
  }, 60_000);

  it('a process opening a new file while another one, creating it too, holds its write lock waits for it instead of failing with "database is locked"', async () => {
    // Switching a new file to WAL is where SQLite does not wait: the other process's lock made
    // the open fail at once (SQLITE_BUSY), before the fix.
    const lock = await lockFromAnotherProcess(path, 300, 'IMMEDIATE');
    try {
      const store = openStore(path, { clock: new FakeClock(T0) });
      expect(connectionOf(store).pragma('journal_mode', { simple: true })).toBe('wal');
      store.close();
      expect(await lock.exited).toBe(0);
      expect(inspect(path).migrations.map((m) => m.name)).toEqual(realMigrations());
    } finally {
      lock.kill();
    }
  });

  it('applies only the missing migrations to an existing database, keeping its data', () => {
    const store = openStore(path, { clock: new FakeClock(T0) });
    store.recordCycle(okCycle(T0, [snap('BX-001', { battery: 42 })]));
    store.close();
    const dir = migrationsWith({ '9001_notes.sql': 'CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);' });
    const again = openStore(path, { clock: new FakeClock(T0 + 1000), migrationsDir: dir });
    expect(again.box('BX-001')?.battery).toBe(42);
    again.close();
    const { migrations, tables } = inspect(path);
    expect(migrations).toEqual([...realMigrations().map((name) => ({ name, applied_at: T0 })), { name: '9001_notes', applied_at: T0 + 1000 }]);
    expect(tables).toContain('notes');
  });

  it('a failing migration is refused as a whole and leaves the database as it was', () => {
    openStore(path).close();
    const dir = migrationsWith({ '9001_broken.sql': 'CREATE TABLE half (id INTEGER);\nCREATE TABLE oops (;' });
    expect(() => openStore(path, { migrationsDir: dir })).toThrow(expect.objectContaining({ code: 'store_migration_failed' }));
    const { migrations, tables } = inspect(path);
    expect(migrations.map((m) => m.name)).toEqual(realMigrations());
    expect(tables).not.toContain('half');
  });

  it('refuses a database migrated by a newer boxwatch', () => {
    openStore(path).close();
    const db = new Database(path);
    db.prepare('INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)').run('9999_future', T0);
    db.close();
    expect(() => openStore(path)).toThrow(
      expect.objectContaining({
        code: 'store_schema_newer',
        message: expect.stringContaining('database schema is newer than this boxwatch; upgrade boxwatch') as string,
      }),
    );
  });

  it('refuses a file that is not a SQLite database, and leaves it alone', () => {
    const text = 'gateway:\n  base_url: http://127.0.0.1:8080\n'.repeat(200);
    writeFileSync(path, text);
    expect(() => openStore(path)).toThrow(expect.objectContaining({ code: 'store_not_sqlite' }));
    expect(readFileSync(path, 'utf8')).toBe(text);
  });

  it('refuses a SQLite database that boxwatch did not create, and leaves it alone', () => {
    const db = new Database(path);
    db.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada');");
    db.close();
    expect(() => openStore(path)).toThrow(expect.objectContaining({ code: 'store_foreign', message: expect.stringContaining('did not create') as string }));
    const { tables } = (() => {
      const d = new Database(path, { readonly: true });
      const t = d.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").pluck().all() as string[];
      d.close();
      return { tables: t };
    })();
    expect(tables).toEqual(['users']);
  });

  it('opens read-only for queries: no file is created, writes are refused, pending migrations are named', () => {
    expect(() => openStore(path, { readonly: true })).toThrow(expect.objectContaining({ code: 'store_not_found' }));
    const store = openStore(path);
    store.recordCycle(okCycle(T0, [snap('BX-001')]));
    store.close();
    const reader = openStore(path, { readonly: true });
    expect(reader.box('BX-001')?.serial).toBe('BX-001');
    expect(reader.valueAt('BX-001', 'battery', T0)?.value).toBe(80);
    expect(() => reader.recordCycle(okCycle(T0 + 30_000, [snap('BX-001')]))).toThrow(expect.objectContaining({ code: 'store_read_only' }));
    reader.close();
    const dir = migrationsWith({ '9001_notes.sql': 'CREATE TABLE notes (id INTEGER PRIMARY KEY);' });
    expect(() => openStore(path, { readonly: true, migrationsDir: dir })).toThrow(
      expect.objectContaining({
        code: 'store_schema_outdated',
        message: 'database schema is older than this boxwatch (pending: 9001_notes); if a boxwatch daemon is starting right now, it is migrating it: try again in a moment; else run boxwatch once with write access to migrate it',
      }),
    );
  });

  it("0020 keys cycles by account and start: a database written before keeps every cycle and its history, and two accounts' cycles of one instant are both stored after", () => {
    // The database as main's code left it: every migration before 0020, and the cycles of two
    // accounts 1 ms apart (cycle times then moved forward across accounts).
    const before = join(tmp.dir, 'migrations-before');
    mkdirSync(before);
    for (const f of readdirSync(defaultMigrationsDir()).filter((f) => f.endsWith('.sql') && f < '0020')) copyFileSync(join(defaultMigrationsDir(), f), join(before, f));
    const of = (account: string, t: number, serial: string, battery: number): ReturnType<typeof okCycle> => {
      const write = okCycle(t, [snap(serial, { battery })]);
      return { ...write, cycle: { ...write.cycle, account } };
    };
    const old = openStore(path, { clock: new FakeClock(T0), migrationsDir: before });
    for (let i = 0; i < 3; i++) {
      old.recordCycle(of('default', T0 + i * 30_000, 'BX-001', 60 - i));
      old.recordCycle(of('acme', T0 + i * 30_000 + 1, 'acme/BX-001', 40 - i));
    }
    expect(() => connectionOf(old).prepare("INSERT INTO cycles (started_at, duration_ms, requests, outcome, boxes, details_fetched, account) VALUES (?, 0, 0, 'ok', 0, 0, 'initech')").run(T0)).toThrow(/UNIQUE/);
    const cyclesBefore = connectionOf(old).prepare('SELECT * FROM v_cycles ORDER BY account, started_at').all();
    old.close();

    const store = openStore(path, { clock: new FakeClock(T0 + 60_000) });
    expect(connectionOf(store).prepare('SELECT * FROM v_cycles ORDER BY account, started_at').all()).toEqual(cyclesBefore);
    expect(inspect(path).migrations.map((m) => m.name)).toEqual(realMigrations());
    expect(store.lastCycles().map((c) => [c.account, c.startedAt])).toEqual([['acme', T0 + 60_001], ['default', T0 + 60_000]]);
    expect(store.valueAt('acme/BX-001', 'battery', T0 + 30_001)?.value).toBe(39);
    // Both accounts' next cycles start in the same millisecond: each is stored at its own start.
    expect(store.recordCycle(of('default', T0 + 90_000, 'BX-001', 57))).toEqual({ startedAt: T0 + 90_000, clockBehindMs: 0 });
    expect(store.recordCycle(of('acme', T0 + 90_000, 'acme/BX-001', 37))).toEqual({ startedAt: T0 + 90_000, clockBehindMs: 0 });
    expect(connectionOf(store).prepare('SELECT account, started_at FROM v_cycles WHERE started_at = ? ORDER BY account').all(T0 + 90_000)).toEqual([
      { account: 'acme', started_at: T0 + 90_000 },
      { account: 'default', started_at: T0 + 90_000 },
    ]);
    expect(store.history('acme/BX-001', 'battery', T0, T0 + 90_001, { kind: 'raw' }).points.map((p) => (p as { value: unknown }).value)).toEqual([40, 39, 38, 37]);
    expect(store.lastCycle()?.startedAt).toBe(T0 + 90_000);
    store.close();
  });
});
