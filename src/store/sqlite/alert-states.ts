/**
 * Alert state per (rule, box) in `alert_states` (migrations/0002_alerts.sql): the engine's
 * AlertState as JSON, with key, rule, serial and status copied into plain columns. Reading,
 * rebuilding a damaged row and deciding what to write back: AlertStateRows
 * (src/store/repository-rows.ts, shared with PostgreSQL).
 *
 * The states as this connection last read or wrote them are kept in memory, so that a cycle (and
 * /metrics, which counts the firing ones) does not parse every row again. The store drops them
 * (`reset`) after a rolled-back transaction and when another connection has written (store.ts).
 */
import type Database from 'better-sqlite3';
import type { AlertState } from '../../alerts/types.js';
import type { DamagedRows } from '../damaged-rows.js';
import { AlertStateRows, type StateDbRow } from '../repository-rows.js';

export class SqliteAlertStates {
  private readonly s;
  private readonly rows: AlertStateRows;
  /** Every row as stored (state objects are never mutated: the engine makes new ones); null: read the table. */
  private known: Map<string, AlertState> | null = null;

  constructor(db: Database.Database, damaged: DamagedRows, now: () => number) {
    this.rows = new AlertStateRows(damaged, now);
    this.s = {
      all: db.prepare('SELECT key, rule, serial, status, state FROM alert_states'),
      upsert: db.prepare(
        'INSERT INTO alert_states (key, rule, serial, status, state) VALUES (?, ?, ?, ?, ?) ' +
          'ON CONFLICT(key) DO UPDATE SET status = excluded.status, state = excluded.state',
      ),
      delete: db.prepare('DELETE FROM alert_states WHERE key = ?'),
    };
  }

  /** Every alert not at rest, keyed as the engine keys them. */
  states(): Map<string, AlertState> {
    return new Map(this.stored());
  }

  /** Writes the states that differ from `prev` and deletes the dropped keys. */
  save(prev: ReadonlyMap<string, AlertState>, next: ReadonlyMap<string, AlertState>, dropped: readonly string[]): void {
    const known = this.stored();
    const { upserts, deletes } = this.rows.changes(prev, next, dropped);
    for (const u of upserts) {
      this.s.upsert.run(u.key, u.rule, u.serial, u.status, u.state);
      known.set(u.key, next.get(u.key) as AlertState);
    }
    for (const key of deletes) {
      this.s.delete.run(key);
      known.delete(key);
    }
  }

  private stored(): Map<string, AlertState> {
    this.known ??= this.rows.decode(this.s.all.all() as StateDbRow[]);
    return this.known;
  }

  /** Forgets the states held in memory: read from the table when next asked. */
  reset(): void {
    this.known = null;
  }
}
