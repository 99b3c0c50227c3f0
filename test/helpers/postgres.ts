/**
 * A throwaway PostgreSQL server for tests: Debian's `postgresql` binaries (initdb, pg_ctl), a
 * fresh cluster in a temporary directory, listening on 127.0.0.1 on a free port, trust
 * authentication, removed when stopped. Started once per test file (`beforeAll`), a database per
 * test suite via `createDatabase()`; `cleanDatabase()` gives a suite's tests the same database
 * emptied (faster than a database per test).
 *
 * PostgreSQL refuses to run as root; as root (CI) the cluster is owned by and run as the
 * `postgres` system user that the Debian package creates. `findPostgres()` returns undefined when
 * the binaries are absent, so suites can `describe.skipIf` with a message rather than fail.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe } from 'vitest';

export interface PostgresBinaries {
  initdb: string;
  pgCtl: string;
  /** The client tools of the same version (backups). */
  pgDump: string;
  pgRestore: string;
}

/** The newest installed server's binaries, or undefined when PostgreSQL is not installed. */
export function findPostgres(): PostgresBinaries | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  const v = versions[0];
  if (v === undefined) return undefined;
  const bin = (name: string): string => join(root, v, 'bin', name);
  return { initdb: bin('initdb'), pgCtl: bin('pg_ctl'), pgDump: bin('pg_dump'), pgRestore: bin('pg_restore') };
}

/**
 * A describe block that needs PostgreSQL: skipped, saying why in its title, when the binaries are
 * absent (CI installs them; see .ci/run).
 */
export function describeWithPostgres(title: string, fn: () => void): void {
  const missing = findPostgres() === undefined;
  describe.skipIf(missing)(missing ? `${title} (skipped: PostgreSQL is not installed; apt-get install postgresql)` : title, fn);
}

/** A TCP port free on 127.0.0.1 now (for servers a test starts). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export class PostgresServer {
  private constructor(
    private readonly bin: PostgresBinaries,
    private readonly dir: string,
    private readonly asUser: string | undefined,
    readonly port: number,
  ) {}

  /** initdb + pg_ctl start; resolves when the server accepts connections. */
  static async start(): Promise<PostgresServer> {
    const bin = findPostgres();
    if (bin === undefined) throw new Error('PostgreSQL is not installed (apt-get install postgresql)');
    const dir = mkdtempSync(join(tmpdir(), 'boxwatch-pg-'));
    const asUser = process.getuid?.() === 0 ? 'postgres' : undefined;
    if (asUser !== undefined) {
      const uid = Number(execFileSync('id', ['-u', asUser]).toString().trim());
      const gid = Number(execFileSync('id', ['-g', asUser]).toString().trim());
      chownSync(dir, uid, gid);
      chmodSync(dir, 0o700);
    }
    let server = new PostgresServer(bin, dir, asUser, await freePort());
    server.run(bin.initdb, ['-D', server.dataDir, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
    // The free port may be taken by another process before the server listens on it (parallel
    // test files, other suites on the machine): then the server says so in its log; another port.
    for (let attempt = 1; ; attempt++) {
      try {
        server.run(bin.pgCtl, [
          '-D', server.dataDir, '-l', join(dir, 'server.log'), '-w', '-t', '30',
          '-o', `-p ${server.port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`,
          'start',
        ]);
        return server;
      } catch (err) {
        const log = existsSync(join(dir, 'server.log')) ? readFileSync(join(dir, 'server.log'), 'utf8') : '';
        if (attempt >= 5 || !log.includes('could not create listen socket')) throw err;
        server = new PostgresServer(bin, dir, asUser, await freePort());
      }
    }
  }

  private get dataDir(): string {
    return join(this.dir, 'data');
  }

  private run(cmd: string, args: string[]): void {
    const [file, argv] = this.asUser === undefined ? [cmd, args] : ['runuser', ['-u', this.asUser, '--', cmd, ...args]];
    const res = spawnSync(file, argv, { encoding: 'utf8' });
    if (res.status !== 0) throw new Error(`${cmd} failed (${res.status}): ${res.stderr || res.stdout}`);
  }

  /** A connection URL for database `db` (created by createDatabase, or `postgres`). */
  url(db = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${db}`;
  }

  /** Creates an empty database and returns its URL. */
  async createDatabase(name: string): Promise<string> {
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: this.url() });
    await client.connect();
    try {
      await client.query(`CREATE DATABASE "${name.replace(/"/g, '')}"`);
    } finally {
      await client.end();
    }
    return this.url(name);
  }

  /**
   * The URL of database `name`, created on first use and emptied on every later call (every table
   * but `schema_migrations` truncated, identities restarted): one database per suite, a clean one
   * per test.
   */
  async cleanDatabase(name: string): Promise<string> {
    if (!this.databases.has(name)) {
      this.databases.add(name);
      return this.createDatabase(name);
    }
    const url = this.url(name);
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const tables = await client.query<{ t: string }>("SELECT quote_ident(tablename) AS t FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations'");
      if (tables.rows.length > 0) await client.query(`TRUNCATE ${tables.rows.map((r) => r.t).join(', ')} RESTART IDENTITY`);
    } finally {
      await client.end();
    }
    return url;
  }

  private readonly databases = new Set<string>();

  stop(): void {
    try {
      this.run(this.bin.pgCtl, ['-D', this.dataDir, '-m', 'immediate', '-w', 'stop']);
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}

/** One statement on a connection of its own (to plant rows the repositories would never write). */
export async function rawQuery(url: string, sql: string, params: unknown[] = []): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql, params);
  } finally {
    await client.end();
  }
}

/** The rows of `sql` on a connection of its own ([] while the tables are not there yet: a database being migrated). */
export async function pgRows<R>(url: string, sql: string): Promise<R[]> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as R[];
  } catch {
    return []; // the tables are not there yet
  } finally {
    await client.end();
  }
}
