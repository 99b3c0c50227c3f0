/**
 * `storage.url: ${BOXWATCH_DATABASE_URL}` (PostgreSQL): validated as a postgres:// URL, a secret
 * (its password never printed by check-config nor in an error), exclusive with storage.path. The
 * SQLite-only commands (sql, export, backup) say so in one line, with what to use instead (exit
 * 2); a server that cannot be reached is one line naming storage.url and what to check. The CLI
 * runs in-process; the commands on a real PostgreSQL server are in test/e2e/postgres-daemon.e2e.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/index.js';
import { runCommand } from '../helpers/cli.js';

const PASSWORD = 'pg-Pa55w0rd-xyz';
const DATABASE_URL = `postgres://boxwatch:${PASSWORD}@db.internal:5432/boxwatch`;
const ENV = { BOXWATCH_SECRET_KEY: 'sk-test', BOXWATCH_DATABASE_URL: DATABASE_URL };

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-storage-url-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function configFile(name: string, storage: string): string {
  const path = join(dir, name);
  writeFileSync(path, `gateway:\n  secret_key: \${BOXWATCH_SECRET_KEY}\nstorage:\n${storage}`);
  return path;
}

describe('storage.url', () => {
  it('selects PostgreSQL: the URL is kept, no SQLite path is implied', () => {
    const config = parseConfig('gateway: { secret_key: k }\nstorage: { url: "${BOXWATCH_DATABASE_URL}" }\n', ENV);
    expect(config.storage.url).toBe(DATABASE_URL);
    expect(config.storage.path).toBeUndefined();
    expect(parseConfig('gateway: { secret_key: k }\n', {}).storage.path).toBe('./data/boxwatch.db');
    expect(parseConfig('gateway: { secret_key: k }\nstorage: { url: "postgresql://h/db" }\n', {}).storage.url).toBe('postgresql://h/db');
  });

  it('check-config prints it with the password redacted', async () => {
    const r = await runCommand(['check-config', '--config', configFile('ok.yaml', '  url: ${BOXWATCH_DATABASE_URL}\n')], ENV);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain('url: postgres://boxwatch:[redacted]@db.internal:5432/boxwatch');
    expect(r.out).not.toContain(PASSWORD);
    expect(r.out).not.toMatch(/^\s*path:/m);
  });

  it('with storage.path too: exit 2, the error names both fields and not the password', async () => {
    const r = await runCommand(['check-config', '--config', configFile('both.yaml', '  path: /var/lib/boxwatch/boxwatch.db\n  url: ${BOXWATCH_DATABASE_URL}\n')], ENV);
    expect(r.code).toBe(2);
    expect(r.err).toContain('storage.url: storage.url (PostgreSQL) and storage.path (SQLite) are mutually exclusive');
    expect(r.out + r.err).not.toContain(PASSWORD);
  });

  it('not a PostgreSQL URL: exit 2 naming the field, the value (and its password) not echoed', async () => {
    const r = await runCommand(['check-config', '--config', configFile('mysql.yaml', '  url: ${BOXWATCH_DATABASE_URL}\n')], { ...ENV, BOXWATCH_DATABASE_URL: `mysql://boxwatch:${PASSWORD}@db/boxwatch` });
    expect(r.code).toBe(2);
    expect(r.err).toContain('storage.url: must be a postgres:// or postgresql:// URL');
    expect(r.out + r.err).not.toContain(PASSWORD);
  });

  it.each([
    ['sql', ['SELECT 1'], 'psql'],
    ['export', ['--format', 'csv'], 'boxwatch migrate --from postgres://... --to sqlite:FILE'],
    ['backup', [join(tmpdir(), 'never-written.db')], 'pg_dump'],
  ])('%s works on SQLite only: one line saying so and what to use instead, exit 2, without the password', async (command, args, instead) => {
    const r = await runCommand([command, ...args, '--config', configFile(`${command}.yaml`, '  url: ${BOXWATCH_DATABASE_URL}\n')], ENV);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`boxwatch ${command} works on a SQLite file only and this configuration's store is PostgreSQL (storage.url)`);
    expect(r.err).toContain(instead);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.out + r.err).not.toContain(PASSWORD);
  });

  it.each([['status'], ['alerts'], ['silence list']])('%s on a server that does not answer: one line naming storage.url and what to check, without the password', async (command) => {
    const env = { ...ENV, BOXWATCH_DATABASE_URL: `postgres://boxwatch:${PASSWORD}@127.0.0.1:1/boxwatch` };
    const r = await runCommand([...command.split(' '), '--config', configFile(`${command.replace(' ', '-')}.yaml`, '  url: ${BOXWATCH_DATABASE_URL}\n')], env);
    expect(r.code).toBe(1);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toContain('storage.url: cannot use the PostgreSQL database postgres://boxwatch@127.0.0.1:1/boxwatch');
    expect(r.err).toContain('check that the server runs');
    expect(r.out + r.err).not.toContain(PASSWORD);
  });
});
