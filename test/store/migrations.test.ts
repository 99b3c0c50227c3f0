/**
 * Opening databases: fresh ones are created and migrated, existing ones get only the missing
 * migrations, and files boxwatch must not touch are refused with a typed error and left as found.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { openStore } from '../../src/store/index.js';
import { APPLICATION_ID, defaultMigrationsDir } from '../../src/store/migrate.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { okCycle, snap, tempDir } from './model.js';
import { connectionOf } from '../helpers/sqlite.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');
const execFileAsync = promisify(execFile);
let tmp: ReturnType<typeof tempDir>;
let path: string;
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

  it('several processes creating one new database at once (replicas starting together) all open it, each migration applied once', async () => {
    const storeModule = pathToFileURL(join(process.cwd(), 'dist/src/store/index.js')).href;
    const code = `const { openStore } = await import(${JSON.stringify(storeModule)}); openStore(process.argv[1]).close();`;
    const runs = Array.from({ length: 4 }, () => execFileAsync(process.execPath, ['--input-type=module', '-e', code, path]).then(() => 'ok', (err: { stderr?: string }) => err.stderr ?? String(err)));
    expect(await Promise.all(runs)).toEqual(['ok', 'ok', 'ok', 'ok']);
    expect(inspect(path).migrations.map((m) => m.name)).toEqual(realMigrations());
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
    expect(() => openStore(path, { readonly: true, migrationsDir: dir })).toThrow(expect.objectContaining({ code: 'store_schema_outdated' }));
  });
});
