/**
 * Upgrades: before openStore applies new migrations to a database that already has some, it
 * writes a copy of the database as it was beside it, and logs where.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import Database from 'better-sqlite3';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger, type Logger } from '../../src/log.js';
import { openStore } from '../../src/store/index.js';
import { defaultMigrationsDir } from '../../src/store/migrate.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { okCycle, snap } from '../store/model.js';
import { ensureBuilt } from '../e2e/build.js';
import { openAtOnce } from '../helpers/sqlite-processes.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');
let dir: string;
let dbPath: string;
let migrations: string;

beforeAll(ensureBuilt, 120_000);
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-upgrade-'));
  dbPath = join(dir, 'boxwatch.db');
  migrations = join(dir, 'migrations');
  mkdirSync(migrations);
  for (const f of readdirSync(defaultMigrationsDir()).filter((f) => f.endsWith('.sql'))) copyFileSync(join(defaultMigrationsDir(), f), join(migrations, f));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function capturingLogger(): { logger: Logger; records: () => { msg: string; [k: string]: unknown }[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString());
      cb();
    },
  });
  return {
    logger: createLogger({ level: 'info', destination }),
    records: () =>
      lines
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { msg: string }),
  };
}

const backups = (): string[] => readdirSync(dir).filter((f) => f.endsWith('.bak')).sort();

function migrationNames(file: string): string[] {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare('SELECT name FROM schema_migrations ORDER BY name').pluck().all() as string[];
  } finally {
    db.close();
  }
}

describe('backup before migrating', () => {
  it('a new database is migrated without a backup; an upgrade writes <db>.before-<migration>.bak with the data as it was, and logs it', () => {
    const clock = new FakeClock(T0);
    const first = openStore(dbPath, { clock, migrationsDir: migrations });
    first.recordCycle(okCycle(T0, [snap('BX-001'), snap('BX-002', { connected: false })]));
    first.close();
    expect(backups()).toEqual([]);
    const before = migrationNames(dbPath);

    writeFileSync(join(migrations, '9001_ops_extra.sql'), 'CREATE TABLE ops_extra (x INTEGER);');
    const { logger, records } = capturingLogger();
    const upgraded = openStore(dbPath, { clock, migrationsDir: migrations, logger });
    upgraded.close();

    const backupPath = `${dbPath}.before-9001_ops_extra.bak`;
    expect(backups()).toEqual(['boxwatch.db.before-9001_ops_extra.bak']);
    const logged = records().find((r) => r.msg === 'database backed up before migrating');
    expect(logged?.['backup']).toBe(backupPath);
    // The backup logs before the migration it protects.
    const order = records().map((r) => r.msg);
    expect(order.indexOf('database backed up before migrating')).toBeLessThan(order.indexOf('database migration applied'));

    // The copy is the database before the upgrade: old migrations only, same boxes; it opens with
    // the old set of migrations (a downgrade is: stop, copy the backup back, start the old version).
    expect(migrationNames(backupPath)).toEqual(before);
    expect(migrationNames(dbPath)).toEqual([...before, '9001_ops_extra']);
    rmSync(join(migrations, '9001_ops_extra.sql'));
    const restored = openStore(backupPath, { readonly: true, migrationsDir: migrations });
    try {
      expect(restored.boxes().map((b) => [b.serial, b.connected])).toEqual([
        ['BX-001', true],
        ['BX-002', false],
      ]);
    } finally {
      restored.close();
    }

    // Nothing pending: no further backup.
    writeFileSync(join(migrations, '9001_ops_extra.sql'), 'CREATE TABLE ops_extra (x INTEGER);');
    openStore(dbPath, { clock, migrationsDir: migrations }).close();
    expect(backups()).toHaveLength(1);
  });

  it('a failed migration leaves the database and its backup; the next attempt writes a second backup instead of replacing the first', () => {
    const clock = new FakeClock(T0);
    openStore(dbPath, { clock, migrationsDir: migrations }).close();
    writeFileSync(join(migrations, '9002_broken.sql'), 'CREATE TABLE nope (;');
    expect(() => openStore(dbPath, { clock, migrationsDir: migrations })).toThrow(/migration 9002_broken failed/);
    expect(() => openStore(dbPath, { clock, migrationsDir: migrations })).toThrow(/migration 9002_broken failed/);
    expect(backups()).toEqual(['boxwatch.db.before-9002_broken.2.bak', 'boxwatch.db.before-9002_broken.bak']);
    expect(migrationNames(dbPath)).not.toContain('9002_broken');
  });

  it('refuses to migrate when the backup cannot be written (a file size limit: as a full disk), and leaves the database as it was, with no partial copy beside it', async () => {
    const clock = new FakeClock(T0);
    openStore(dbPath, { clock, migrationsDir: migrations }).close();
    const before = migrationNames(dbPath);
    writeFileSync(join(migrations, '9003_extra.sql'), 'CREATE TABLE extra (x INTEGER);');
    // The tests run as root, so permissions cannot stand in for a full disk; a process whose
    // writes are limited to 64 KiB can open the database (it is well over that) but not copy it.
    const [outcome] = await openAtOnce(dbPath, { processes: 1, migrationsDir: migrations, fileSizeLimitKiB: 64 });
    expect(outcome).toMatch(/store_migration_failed cannot write the backup .*before-9003_extra\.bak before migrating \(nothing was migrated\)/);
    expect(migrationNames(dbPath)).toEqual(before);
    expect(readdirSync(dir).filter((f) => f.startsWith('boxwatch.db.'))).toEqual([]);
  });

  it('a partial backup left by a process killed while writing it is removed by the next upgrade, which writes its own', () => {
    const clock = new FakeClock(T0);
    openStore(dbPath, { clock, migrationsDir: migrations }).close();
    writeFileSync(join(migrations, '9005_extra.sql'), 'CREATE TABLE extra (x INTEGER);');
    // What a SIGKILL during VACUUM INTO leaves (the process's pid and a random part in its name).
    const left = `${dbPath}.before-9005_extra.4242-0badf00d.partial`;
    writeFileSync(left, Buffer.alloc(4096, 1));
    writeFileSync(`${left}-journal`, Buffer.alloc(512, 1));
    writeFileSync(`${dbPath}.before-9004_older.4243-deadbeef.partial`, 'an earlier attempt of another version');
    openStore(dbPath, { clock, migrationsDir: migrations }).close();
    expect(readdirSync(dir).filter((f) => f.startsWith('boxwatch.db.'))).toEqual(['boxwatch.db.before-9005_extra.bak']);
  });

  it('an existing file at the backup name (even a dangling link) is never replaced: the copy takes the next name', () => {
    const clock = new FakeClock(T0);
    openStore(dbPath, { clock, migrationsDir: migrations }).close();
    writeFileSync(join(migrations, '9003_extra.sql'), 'CREATE TABLE extra (x INTEGER);');
    symlinkSync(join(dir, 'no-such-folder', 'backup.db'), `${dbPath}.before-9003_extra.bak`);
    openStore(dbPath, { clock, migrationsDir: migrations }).close();
    expect(backups()).toEqual(['boxwatch.db.before-9003_extra.2.bak', 'boxwatch.db.before-9003_extra.bak']);
    expect(readlinkSync(`${dbPath}.before-9003_extra.bak`)).toBe(join(dir, 'no-such-folder', 'backup.db'));
    expect(migrationNames(`${dbPath}.before-9003_extra.2.bak`)).not.toContain('9003_extra');
  });

  it('an upgrade started by eight processes at once (replicas restarted together on a new version): one backup, of the database as it was, and every process opens it', async () => {
    const clock = new FakeClock(T0);
    const first = openStore(dbPath, { clock, migrationsDir: migrations });
    first.recordCycle(okCycle(T0, [snap('BX-001')]));
    first.close();
    const before = migrationNames(dbPath);
    writeFileSync(join(migrations, '9004_extra.sql'), 'CREATE TABLE extra (x INTEGER);');
    expect(await openAtOnce(dbPath, { migrationsDir: migrations })).toEqual(Array.from({ length: 8 }, () => 'ok'));
    expect(backups()).toEqual(['boxwatch.db.before-9004_extra.bak']);
    expect(migrationNames(`${dbPath}.before-9004_extra.bak`)).toEqual(before);
    expect(migrationNames(dbPath)).toEqual([...before, '9004_extra']);
    expect(readdirSync(dir).filter((f) => f.startsWith('boxwatch.db.') && !f.endsWith('.bak'))).toEqual([]);
  });
});
