/**
 * `boxwatch backup FILE`: an online copy of the live database, taken while a daemon (createApp on
 * the same file, polling the simulator over real HTTP) keeps writing to it.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { allCommands } from '../../src/cli/index.js';
import { runCli } from '../../src/cli/program.js';
import { parseConfig } from '../../src/config/index.js';
import { createGatewayClient } from '../../src/gateway/client.js';
import { silentLogger } from '../../src/log.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { testContext } from './helpers.js';

const KEY = 'ops-backup-key';
let dir: string;
let dbPath: string;
let configPath: string;
let sim: RunningSimulator;
let app: App<SqliteStore>;
let clock: FakeClock;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-backup-'));
  dbPath = join(dir, 'data', 'boxwatch.db');
  configPath = join(dir, 'boxwatch.yaml');
  clock = new FakeClock('2026-03-01T12:00:00Z');
  sim = await startSimulator({ port: 0, key: KEY, devices: 25, seed: 4, clock });
  const yaml = `gateway: { base_url: "${sim.url}", secret_key: "\${KEY}" }\nstorage: { path: "${dbPath}" }\nhttp: false\n`;
  writeFileSync(configPath, yaml);
  const config = parseConfig(yaml, { KEY }, 'test');
  app = createApp({
    config,
    logger: silentLogger,
    clock,
    client: createGatewayClient({ baseUrl: sim.url, secretKey: KEY, retries: 0 }),
    store: openStore(dbPath, { clock }),
    notifiers: [],
  });
  await app.runOnce();
});

afterEach(async () => {
  await app.stop();
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

async function backup(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const ctx = testContext({ KEY });
  const code = await runCli(['backup', ...args], ctx, allCommands);
  return { code, out: ctx.stdout.join(''), err: ctx.stderr.join('') };
}

const serials = (path: string): string[] => {
  const store = openStore(path, { readonly: true });
  try {
    return store.boxes().map((b) => b.serial);
  } finally {
    store.close();
  }
};

describe('boxwatch backup', () => {
  it('copies the live database while the daemon writes to it; the copy opens with openStore and has the same boxes', async () => {
    const target = join(dir, 'copy.db');
    clock.advance(30_000);
    const [result] = await Promise.all([backup(target, '--db', dbPath), app.runOnce()]);
    expect(result.code).toBe(0);
    expect(result.out).toMatch(new RegExp(`^backed up ${dbPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} to .*copy\\.db \\(\\d+\\.\\d (KiB|MiB)\\)\\n$`));
    expect(serials(target)).toHaveLength(25);
    expect(serials(target)).toEqual(app.store.boxes().map((b) => b.serial));
    // A complete database: it passes SQLite's own check, and no temporary file is left behind.
    const db = new Database(target, { readonly: true });
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    db.close();
    expect(readdirSync(dir).filter((f) => f.includes('partial'))).toEqual([]);
  });

  it('finds the database through the configuration', async () => {
    const target = join(dir, 'via-config.db');
    const result = await backup(target, '--config', configPath);
    expect(result.code).toBe(0);
    expect(serials(target)).toHaveLength(25);
  });

  it('refuses to overwrite an existing file unless --force', async () => {
    const target = join(dir, 'copy.db');
    writeFileSync(target, 'precious');
    const refused = await backup(target, '--db', dbPath);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain('exists already; refusing to overwrite it (pass --force to replace it)');
    expect(statSync(target).size).toBe('precious'.length);

    const forced = await backup(target, '--db', dbPath, '--force');
    expect(forced.code).toBe(0);
    expect(serials(target)).toHaveLength(25);
  });

  it('refuses a missing database, a foreign SQLite file, and both --config and --db', async () => {
    const target = join(dir, 'copy.db');
    const missing = await backup(target, '--db', join(dir, 'nope.db'));
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('no database at');

    const foreignPath = join(dir, 'other.sqlite');
    const foreign = new Database(foreignPath);
    foreign.exec('CREATE TABLE t (x)');
    foreign.close();
    const refused = await backup(target, '--db', foreignPath);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain('is not a boxwatch database');

    const both = await backup(target, '--db', dbPath, '--config', configPath);
    expect(both.code).toBe(2);
    expect(both.err).toContain('give --config or --db, not both');
    expect(existsSync(target)).toBe(false);
  });
});
