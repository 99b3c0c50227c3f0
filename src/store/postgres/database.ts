/**
 * The PostgreSQL connection of the store: a `pg` Pool on `storage.url`, the schema brought up to
 * date from migrations/postgres/NNNN_name.sql, and every driver error met at this boundary mapped
 * to a StoreError whose text never holds the URL's password.
 *
 * - Migrations run in one transaction under a transaction-scoped advisory lock (released with the
 *   transaction or the connection, so a lost connection never leaves it behind): two processes
 *   starting together migrate once. A database carrying a migration this code does not know is
 *   refused (`store_schema_newer`); one holding tables of ours but no migration record is refused
 *   (`store_foreign`); a failing file applies nothing (`store_migration_failed`).
 * - bigint columns (times in ms, ids, counts) are read as JavaScript numbers.
 * - PostgreSQL text cannot hold a NUL character: one in a text parameter (hostile text from a box)
 *   is stored as U+FFFD rather than failing the whole write.
 * - Connection failures (refused, unknown host, authentication, missing database, server
 *   shutting down) become `store_unavailable`, naming the database as `postgres://user@host:port/db`.
 * - Nothing waits for ever on a connection that silently died (a network cut drops packets, a
 *   process frozen by SIGSTOP or a stopped VM keeps its sockets open): the client's sockets send
 *   TCP keepalives and give up on a call after `statementTimeoutMs` plus a margin (the
 *   connection is then dropped); the server ends a statement running longer than
 *   `statementTimeoutMs` and a session left idle inside a transaction for
 *   `idleInTransactionTimeoutMs`, rolling it back, so that the locks of a client that vanished
 *   mid-transaction (the lease row its fence holds, the cycle writers' advisory lock) do not
 *   block the other replicas for ever.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { Logger } from '../../log.js';
import { silentLogger } from '../../log.js';
import { packageFile } from '../../package-files.js';
import { StoreError } from '../errors.js';
import { redact } from '../../redact.js';
import { systemClock, type Clock } from '../../clock.js';

const MIGRATION_FILE = /^(\d{4})_[A-Za-z0-9_-]+\.sql$/;
/** The tables of migrations/postgres: one of them without a migration record means a database boxwatch did not create. */
const OUR_TABLES = ['alert_states', 'alert_transitions', 'silences', 'notification_queue', 'outbox', 'boxes', 'cycles', 'samples', 'rollups'];
/** Key of the advisory lock taken while migrating ('bxwt'). */
const MIGRATE_LOCK = 0x62787774;

export interface PostgresOptions {
  logger?: Logger;
  /** When migrations are recorded as applied (default the system clock). */
  clock?: Clock;
  /** Where the NNNN_name.sql files are; default: the package's migrations/postgres/ folder. */
  migrationsDir?: string;
  /** Most connections the pool opens (default 10). */
  maxConnections?: number;
  /** How long to wait for a connection before failing (ms, default 10 s). */
  connectTimeoutMs?: number;
  /** The server ends a statement running longer (ms, default 60 s); the client gives a call up 10 s later (at most twice this). */
  statementTimeoutMs?: number;
  /**
   * The server ends (rolls back) a session idle inside a transaction this long (ms, default 60 s):
   * a client that froze or lost its connection mid-transaction releases its locks then. Replicas
   * set half their lease, so that a frozen replica's locks are gone before its lease expires.
   */
  idleInTransactionTimeoutMs?: number;
}

/** The defaults of `statementTimeoutMs` and `idleInTransactionTimeoutMs`. */
export const STATEMENT_TIMEOUT_MS = 60_000;
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 60_000;
/** How long the client waits for a call before it gives it up (and drops the connection): the server's statement timeout and a margin. */
const clientTimeout = (statementMs: number): number => statementMs + Math.min(10_000, statementMs);

/** The URL as it may be shown: `postgres://user@host:port/db`, never the password or the query. */
export function describeDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    const user = u.username === '' ? '' : `${decodeURIComponent(u.username)}@`;
    return `${u.protocol}//${user}${u.host}${u.pathname}`;
  } catch {
    return 'the PostgreSQL database (unparsable URL)';
  }
}

/** The password of a URL (to redact from driver messages), or nothing. */
function passwordOf(url: string): string[] {
  try {
    const p = new URL(url).password;
    return p === '' ? [] : [p];
  } catch {
    return [];
  }
}

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE']);

/** A connection-level failure: network, authentication, missing database, server going away. */
function isConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (CONNECTION_CODES.has(code)) return true;
    // SQLSTATE classes 08 (connection exception), 28 (invalid authorization), 3D000 (no such
    // database), 57P0x (the server is shutting down or starting).
    if (/^(08|28)/.test(code) || code === '3D000' || /^57P0[1-3]$/.test(code)) return true;
  }
  // `Query read timeout`: the client gave the call up (query_timeout), the connection is dropped.
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Query read timeout/i.test(err.message);
}

/** A PostgreSQL database of boxwatch: the pool and the one way errors leave it. */
export class PostgresDatabase {
  private constructor(
    private readonly pool: pg.Pool,
    /** The database as it may be shown (no password). */
    readonly name: string,
    /** The URL's password, redacted from every message that leaves. */
    private readonly secrets: readonly string[],
  ) {}

  /** Connects to `url` and migrates its schema; throws StoreError (store_unavailable, store_schema_newer, ...). */
  static async open(url: string, options: PostgresOptions = {}): Promise<PostgresDatabase> {
    const logger = options.logger ?? silentLogger;
    const pool = new pg.Pool({
      connectionString: url,
      max: options.maxConnections ?? 10,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
      statement_timeout: options.statementTimeoutMs ?? STATEMENT_TIMEOUT_MS,
      idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs ?? IDLE_IN_TRANSACTION_TIMEOUT_MS,
      query_timeout: clientTimeout(options.statementTimeoutMs ?? STATEMENT_TIMEOUT_MS),
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      application_name: 'boxwatch',
      types: { getTypeParser: bigintAsNumber },
    });
    const db = new PostgresDatabase(pool, describeDatabaseUrl(url), passwordOf(url));
    // An idle connection that breaks (server restart, network cut) must not crash the process: the
    // pool drops it and the next query opens another.
    pool.on('error', (err) => logger.warn({ database: db.name, err: redact(err.message, db.secrets) }, 'PostgreSQL connection lost'));
    try {
      await db.migrate(options.migrationsDir ?? packageFile('migrations', 'postgres'), logger, options.clock ?? systemClock);
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw err;
    }
    return db;
  }

  /** One statement; rows typed by the caller. */
  async query<R extends object>(sql: string, params: readonly unknown[] = []): Promise<R[]> {
    try {
      return (await this.pool.query<R>(sql, storable(params))).rows;
    } catch (err) {
      throw this.mapError(err);
    }
  }

  /** Runs `fn` in one transaction on one connection: committed when it resolves, rolled back when it throws. */
  async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw this.mapError(err);
    }
    let broken = false;
    // A connection that breaks while checked out (network cut, server gone) emits 'error' on the
    // client, which the pool only listens for on idle ones: without this, the process would crash.
    // The query in flight fails as well, and the client is dropped when released.
    const onBroken = (): void => {
      broken = true;
    };
    client.on('error', onBroken);
    try {
      await client.query('BEGIN');
      const result = await fn({ query: async <R extends object>(sql: string, params: readonly unknown[] = []) => (await client.query<R>(sql, storable(params))).rows });
      await client.query('COMMIT');
      return result;
    } catch (err) {
      if (broken || isConnectionError(err)) {
        broken = true; // the connection is gone or stuck: dropped, and the server rolls back on its own
      } else {
        try {
          await client.query('ROLLBACK');
        } catch {
          broken = true;
        }
      }
      throw this.mapError(err);
    } finally {
      client.removeListener('error', onBroken);
      client.release(broken);
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  /** A StoreError for a connection failure (password redacted); other errors pass through. */
  mapError(err: unknown): unknown {
    if (err instanceof StoreError || !isConnectionError(err)) return err;
    return new StoreError('store_unavailable', `cannot use the PostgreSQL database ${this.name}: ${redact((err as Error).message, this.secrets)}`);
  }

  private async migrate(dir: string, logger: Logger, clock: Clock): Promise<void> {
    const known = readdirSync(dir)
      .filter((f) => MIGRATION_FILE.test(f))
      .sort()
      .map((f) => ({ name: f.slice(0, -'.sql'.length), file: join(dir, f) }));
    await this.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATE_LOCK]);
      const [found] = await tx.query<{ ours: boolean; tables: number }>(
        "SELECT to_regclass('schema_migrations') IS NOT NULL AS ours, (SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = ANY($1)) AS tables",
        [OUR_TABLES],
      );
      if (found !== undefined && !found.ours && found.tables > 0) {
        throw new StoreError('store_foreign', `${this.name} holds tables named like boxwatch's but was not created by boxwatch; give boxwatch a database (or schema) of its own`);
      }
      await tx.query('CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at bigint NOT NULL)');
      const applied = new Set((await tx.query<{ name: string }>('SELECT name FROM schema_migrations')).map((r) => r.name));
      const names = new Set(known.map((m) => m.name));
      const newer = [...applied].filter((n) => !names.has(n)).sort();
      if (newer.length > 0) {
        throw new StoreError('store_schema_newer', `${this.name} was migrated by a newer boxwatch (${newer.join(', ')}); upgrade boxwatch`);
      }
      for (const m of known) {
        if (applied.has(m.name)) continue;
        try {
          await tx.query(readFileSync(m.file, 'utf8'));
          await tx.query('INSERT INTO schema_migrations (name, applied_at) VALUES ($1, $2)', [m.name, clock.now()]);
        } catch (err) {
          if (isConnectionError(err)) throw err;
          throw new StoreError('store_migration_failed', `migration ${m.name} failed on ${this.name} (nothing of it was applied): ${(err as Error).message}`, { cause: err });
        }
        logger.info({ database: this.name, migration: m.name }, 'migration applied');
      }
    });
  }
}

/** What runs inside a transaction (and what a repository method given a transaction writes through). */
export interface Transaction {
  query<R extends object>(sql: string, params?: readonly unknown[]): Promise<R[]>;
}

/** Parameters as PostgreSQL can store them: NUL in text (also inside array parameters) becomes U+FFFD. */
function storable(params: readonly unknown[]): unknown[] {
  return params.map((p) => (typeof p === 'string' && p.includes('\u0000') ? p.replaceAll('\u0000', '\uFFFD') : Array.isArray(p) ? storable(p) : p));
}

/** int8 (times, ids, counts) as a number: every value boxwatch stores is below 2^53. */
function bigintAsNumber(oid: number, format?: string): (value: string) => unknown {
  if (oid === pg.types.builtins.INT8) return Number;
  return pg.types.getTypeParser(oid, format as 'text') as (value: string) => unknown;
}
