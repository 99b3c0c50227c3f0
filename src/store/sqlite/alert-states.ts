/**
 * Alert state per (rule, box) in `alert_states` (migrations/0002_alerts.sql): the engine's
 * AlertState as JSON, with key, rule, serial and status copied into plain columns. Reading,
 * rebuilding a damaged row and deciding what to write back: AlertStateRows
 * (src/store/repository-rows.ts, shared with PostgreSQL).
 */
import type Database from 'better-sqlite3';
import type { AlertState } from '../../alerts/types.js';
import type { DamagedRows } from '../damaged-rows.js';
import { AlertStateRows, type StateDbRow } from '../repository-rows.js';

export class SqliteAlertStates {
  private readonly s;
  private readonly rows: AlertStateRows;

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
    return this.rows.decode(this.s.all.all() as StateDbRow[]);
  }

  /** Writes the states that differ from `prev` and deletes the dropped keys. */
  save(prev: ReadonlyMap<string, AlertState>, next: ReadonlyMap<string, AlertState>, dropped: readonly string[]): void {
    const { upserts, deletes } = this.rows.changes(prev, next, dropped);
    for (const u of upserts) this.s.upsert.run(u.key, u.rule, u.serial, u.status, u.state);
    for (const key of deletes) this.s.delete.run(key);
  }
}
