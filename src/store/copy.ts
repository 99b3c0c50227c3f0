/**
 * Copying a whole boxwatch database to another, SQLite to PostgreSQL or back (`boxwatch migrate`):
 * the fleet history, alert state and history, silences, acks, the group_wait queue, the outbox
 * and calls, with their ids, table by table in key order, batch by batch. The source is read in
 * one snapshot (a read transaction; REPEATABLE READ on PostgreSQL), the target written in one
 * transaction: counts are verified per table before it commits, so a target is either a complete,
 * verified copy or untouched. The target must be empty.
 *
 * The tables have the same columns in both databases (migrations/, migrations/postgres/), except
 * the alert key (rule NUL serial) that SQLite stores and PostgreSQL derives; the copy takes the
 * columns both sides have and derives `key` for SQLite; SQLite's `boxes.last_polled` is read as
 * the store reads it (LAST_POLLED, src/store/sqlite/rows.ts). The daemon's hold (`meta` key `daemon`)
 * is not copied. Tables of later features that one side lacks are left out, and said so.
 */
import type Database from 'better-sqlite3';
import { BoxwatchError } from '../errors.js';
import type { PostgresDatabase, Transaction } from './postgres/database.js';
import { LAST_POLLED } from './sqlite/rows.js';

/** A table to copy: its key (the copy's order and the keyset of its batches). */
interface TableSpec {
  name: string;
  key: readonly string[];
  /** PostgreSQL identity column (its sequence is moved past the copied ids). */
  identity?: string;
  /** Rows left out (SQL condition on the source). */
  skip?: string;
  /** Columns a SQLite source reads through an expression (their stored value is not the whole answer). */
  sqliteRead?: Readonly<Record<string, string>>;
}

export const COPIED_TABLES: readonly TableSpec[] = [
  { name: 'strings', key: ['id'] },
  { name: 'meta', key: ['key'], skip: "key = 'daemon'" },
  { name: 'boxes', key: ['id'], sqliteRead: { last_polled: LAST_POLLED } },
  { name: 'cycles', key: ['account', 'started_at'] },
  { name: 'samples', key: ['box_id', 'hour'] },
  { name: 'rollups', key: ['box_id', 'hour'] },
  { name: 'alert_states', key: ['rule', 'serial'] },
  { name: 'alert_transitions', key: ['id'], identity: 'id' },
  { name: 'silences', key: ['id'] },
  { name: 'acks', key: ['id'], identity: 'id' },
  { name: 'notification_queue', key: ['id'], identity: 'id' },
  { name: 'outbox', key: ['id'], identity: 'id' },
  { name: 'calls', key: ['call_id'] },
  { name: 'call_rollups', key: ['day', 'serial', 'agent_id'] },
  { name: 'call_sync', key: ['account'] },
  { name: 'test_calls', key: ['id'], identity: 'id' },
  { name: 'recordings', key: ['call_id'] },
];

/** Rows per batch. */
const BATCH = 500;

/** One side of a copy. */
export interface CopySource {
  /** The database as it may be shown (no password). */
  readonly name: string;
  /** The table's columns; empty when it has no such table. */
  columns(table: string): Promise<string[]>;
  count(spec: TableSpec): Promise<number>;
  /** The rows of `columns`, in key order, in batches. */
  batches(spec: TableSpec, columns: readonly string[]): AsyncIterable<unknown[][]>;
}

export interface CopyTarget {
  readonly name: string;
  columns(table: string): Promise<string[]>;
  count(spec: TableSpec): Promise<number>;
  insert(spec: TableSpec, columns: readonly string[], rows: readonly unknown[][]): Promise<void>;
  /** After a table is copied (PostgreSQL: identity sequences past the copied ids). */
  finish(spec: TableSpec): Promise<void>;
}

export interface CopiedTable {
  table: string;
  rows: number;
}

export interface CopyReport {
  tables: CopiedTable[];
  /** Tables the source has that the target lacks, or the other way round: not copied. */
  skipped: string[];
}

/**
 * Copies every table of `source` into `target` (called inside both sides' transactions). Throws
 * `migrate_target_not_empty` before writing anything when the target holds rows, and
 * `migrate_count_mismatch` when a table's count after the copy differs from the source's.
 */
export async function copyTables(source: CopySource, target: CopyTarget, progress: (t: CopiedTable) => void = () => undefined): Promise<CopyReport> {
  const plan: { spec: TableSpec; columns: string[]; read: string[]; deriveKey: boolean }[] = [];
  const skipped: string[] = [];
  for (const spec of COPIED_TABLES) {
    const [from, to] = [await source.columns(spec.name), await target.columns(spec.name)];
    if (from.length === 0 || to.length === 0) {
      if (from.length > 0 || to.length > 0) skipped.push(spec.name);
      continue;
    }
    if ((await target.count(spec)) > 0) {
      throw new BoxwatchError('migrate_target_not_empty', `${target.name} is not empty (table ${spec.name} has rows); migrate copies into an empty database only`);
    }
    // The alert key (rule NUL serial): stored by SQLite, derived by PostgreSQL.
    const deriveKey = to.includes('key') && !from.includes('key') && from.includes('rule') && from.includes('serial') && spec.name !== 'meta';
    const read = to.filter((c) => from.includes(c));
    plan.push({ spec, columns: deriveKey ? [...read, 'key'] : read, read, deriveKey });
  }
  const tables: CopiedTable[] = [];
  for (const { spec, columns, read, deriveKey } of plan) {
    const expected = await source.count(spec);
    let rows = 0;
    for await (const batch of source.batches(spec, read)) {
      const out = deriveKey ? batch.map((r) => [...r, `${String(r[read.indexOf('rule')])}\u0000${String(r[read.indexOf('serial')])}`]) : batch;
      await target.insert(spec, columns, out);
      rows += batch.length;
    }
    await target.finish(spec);
    const copied = await target.count(spec);
    if (copied !== expected || rows !== expected) {
      throw new BoxwatchError('migrate_count_mismatch', `table ${spec.name}: ${expected} rows in ${source.name}, ${copied} in ${target.name} after the copy; nothing was written`);
    }
    const done = { table: spec.name, rows: copied };
    tables.push(done);
    progress(done);
  }
  return { tables, skipped };
}

// ---------------------------------------------------------------- SQLite

const where = (spec: TableSpec): string => (spec.skip === undefined ? '' : `WHERE NOT (${spec.skip})`);
const quoted = (cols: readonly string[]): string => cols.map((c) => `"${c}"`).join(', ');

/** A SQLite database as a copy's source or target (the caller holds the transaction). */
export class SqliteCopyEnd implements CopySource, CopyTarget {
  constructor(
    private readonly db: Database.Database,
    readonly name: string,
  ) {}

  async columns(table: string): Promise<string[]> {
    return (this.db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all(table) as string[]);
  }

  async count(spec: TableSpec): Promise<number> {
    return this.db.prepare(`SELECT count(*) FROM "${spec.name}" ${where(spec)}`).pluck().get() as number;
  }

  async *batches(spec: TableSpec, columns: readonly string[]): AsyncIterable<unknown[][]> {
    let batch: unknown[][] = [];
    const read = columns.map((c) => (spec.sqliteRead?.[c] === undefined ? `"${c}"` : `${spec.sqliteRead[c]} AS "${c}"`)).join(', ');
    for (const row of this.db.prepare(`SELECT ${read} FROM "${spec.name}" ${where(spec)} ORDER BY ${quoted(spec.key)}`).raw().iterate() as Iterable<unknown[]>) {
      batch.push(row);
      if (batch.length === BATCH) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length > 0) yield batch;
  }

  async insert(spec: TableSpec, columns: readonly string[], rows: readonly unknown[][]): Promise<void> {
    const stmt = this.db.prepare(`INSERT INTO "${spec.name}" (${quoted(columns)}) VALUES (${columns.map(() => '?').join(', ')})`);
    for (const row of rows) stmt.run(...row);
  }

  async finish(): Promise<void> {}
}

// ---------------------------------------------------------------- PostgreSQL

/** A PostgreSQL database as a copy's source or target, inside the caller's transaction `tx`. */
export class PostgresCopyEnd implements CopySource, CopyTarget {
  constructor(
    private readonly tx: Transaction,
    readonly name: string,
  ) {}

  async columns(table: string): Promise<string[]> {
    const rows = await this.tx.query<{ c: string }>(
      'SELECT column_name AS c FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position',
      [table],
    );
    return rows.map((r) => r.c);
  }

  async count(spec: TableSpec): Promise<number> {
    return (await this.tx.query<{ n: number }>(`SELECT count(*)::bigint AS n FROM "${spec.name}" ${where(spec)}`))[0]?.n ?? 0;
  }

  /** Keyset batches: rows after the last key of the previous batch (text keys in byte order, as SQLite's). */
  async *batches(spec: TableSpec, columns: readonly string[]): AsyncIterable<unknown[][]> {
    const keyExpr = (await this.keyTypes(spec)).map((text, i) => `"${spec.key[i]}"${text ? ' COLLATE "C"' : ''}`);
    const keyAliases = spec.key.map((k, i) => `"${k}" AS k${i}`);
    let last: unknown[] | null = null;
    for (;;) {
      const params: unknown[] = last ?? [];
      const after = last === null ? '' : `(${keyExpr.join(', ')}) > (${spec.key.map((_, i) => `$${i + 1}`).join(', ')})`;
      const conditions = [after, spec.skip === undefined ? '' : `NOT (${spec.skip})`].filter((c) => c !== '');
      const rows = await this.tx.query<Record<string, unknown>>(
        `SELECT ${quoted(columns)}, ${keyAliases.join(', ')} FROM "${spec.name}" ${conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : ''} ORDER BY ${keyExpr.join(', ')} LIMIT ${BATCH}`,
        params,
      );
      if (rows.length === 0) return;
      yield rows.map((r) => columns.map((c) => r[c]));
      const end = rows[rows.length - 1] as Record<string, unknown>;
      last = spec.key.map((_, i) => end[`k${i}`]);
      if (rows.length < BATCH) return;
    }
  }

  async insert(spec: TableSpec, columns: readonly string[], rows: readonly unknown[][]): Promise<void> {
    if (rows.length === 0) return;
    // At most 65,535 parameters per statement.
    const per = Math.max(1, Math.floor(30_000 / columns.length));
    for (let i = 0; i < rows.length; i += per) {
      const chunk = rows.slice(i, i + per);
      const values = chunk.map((_, r) => `(${columns.map((__, c) => `$${r * columns.length + c + 1}`).join(', ')})`).join(', ');
      const overriding = spec.identity === undefined ? '' : 'OVERRIDING SYSTEM VALUE';
      await this.tx.query(`INSERT INTO "${spec.name}" (${quoted(columns)}) ${overriding} VALUES ${values}`, chunk.flat());
    }
  }

  async finish(spec: TableSpec): Promise<void> {
    if (spec.identity === undefined) return;
    await this.tx.query(
      `SELECT setval(pg_get_serial_sequence($1, $2), max_id) FROM (SELECT max("${spec.identity}") AS max_id FROM "${spec.name}") AS m WHERE max_id IS NOT NULL`,
      [spec.name, spec.identity],
    );
  }

  private async keyTypes(spec: TableSpec): Promise<boolean[]> {
    const rows = await this.tx.query<{ c: string; t: string }>(
      'SELECT column_name AS c, data_type AS t FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1',
      [spec.name],
    );
    const types = new Map(rows.map((r) => [r.c, r.t]));
    return spec.key.map((k) => types.get(k) === 'text');
  }
}

/** Runs `fn` on a PostgreSQL source in one read-only snapshot. */
export function inSnapshot<T>(db: PostgresDatabase, fn: (tx: Transaction) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
    return fn(tx);
  });
}
