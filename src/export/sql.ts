/**
 * `boxwatch sql`'s engine: a read-only connection to the live database (safe beside the daemon:
 * SQLite WAL) with table-valued functions that decode the compact samples, and a guard that
 * refuses any statement that would write.
 *
 *   points(serial, metric [, from [, to]])      -> t, until, value, time
 *   points_all(metric [, from [, to [, glob]]]) -> serial, t, until, value, time
 *
 * One row per run of equal values (`value` held over [t, until), ms since the epoch; `time` is t
 * as ISO text). from/to are ISO times or ms; by default the whole stored span. The functions read
 * through a second connection (the store): SQLite does not let a function query the connection
 * that is running it.
 */
import Database from 'better-sqlite3';
import { UsageError } from '../errors.js';
import { globProblem, matchesGlob } from '../glob.js';
import { openStore, type SqliteStore } from '../store/index.js';
import { boxRuns, parseMetric, parseTimeArg, storedSpan, type Span } from './points.js';
import { isoTime as iso } from '../time-format.js';

export interface SqlSession {
  db: Database.Database;
  close(): void;
}

/** Opens `path` read-only (it must be a boxwatch database with every migration applied). */
export function openSqlSession(path: string): SqlSession {
  const store = openStore(path, { readonly: true });
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    db.pragma('query_only = ON');
    registerHistoryFunctions(db, store);
  } catch (err) {
    store.close();
    throw err;
  }
  return {
    db,
    close() {
      db.close();
      store.close();
    },
  };
}

function registerHistoryFunctions(db: Database.Database, store: SqliteStore): void {
  const span = (from: unknown, to: unknown): Span => {
    const stored = storedSpan(store) ?? { from: 0, to: 0 };
    return { from: Math.max(stored.from, parseTimeArg(from, 'from', stored.from)), to: Math.min(stored.to, parseTimeArg(to, 'to', stored.to)) };
  };
  db.table('points', {
    columns: ['t', 'until', 'value', 'time'],
    parameters: ['box', 'metric', 'range_from', 'range_to'],
    *rows(...args: unknown[]) {
      const [box, metric, from, to] = args;
      if (typeof box !== 'string') throw new UsageError('points(serial, metric [, from [, to]]): serial must be text');
      const m = parseMetric(metric, 'points()');
      if (store.box(box) === undefined) throw new UsageError(`points(): unknown box ${JSON.stringify(box)}`);
      for (const r of boxRuns(store, box, m, span(from, to))) yield [r.t, r.until, r.value, iso(r.t)];
    },
  });
  db.table('points_all', {
    columns: ['serial', 't', 'until', 'value', 'time'],
    parameters: ['metric', 'range_from', 'range_to', 'box_glob'],
    *rows(...args: unknown[]) {
      const [metric, from, to, glob] = args;
      const m = parseMetric(metric, 'points_all()');
      const s = span(from, to);
      const pattern = typeof glob === 'string' ? glob : '*';
      const problem = globProblem(pattern);
      if (problem !== undefined) throw new UsageError(`points_all(): ${problem}`);
      for (const { serial } of store.boxes()) {
        if (!matchesGlob(serial, pattern)) continue;
        for (const r of boxRuns(store, serial, m, s)) yield [serial, r.t, r.until, r.value, iso(r.t)];
      }
    },
  });
}

/**
 * Prepares one statement, refusing what is not a read-only query: anything that would write (the
 * connection is read-only as well), and statements that return no rows.
 */
export function prepareQuery(db: Database.Database, sql: string): Database.Statement {
  let stmt: Database.Statement;
  try {
    stmt = db.prepare(sql);
  } catch (err) {
    throw new UsageError(`SQL: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!stmt.readonly) throw new UsageError('refused: boxwatch sql only reads; this statement would write to the database');
  if (!stmt.reader) throw new UsageError('refused: boxwatch sql runs queries that return rows (SELECT, WITH, read-only PRAGMA)');
  return stmt;
}
