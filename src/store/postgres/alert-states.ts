/**
 * Alert state per (rule, box) in PostgreSQL (`alert_states`), rows as in SQLite except the key:
 * it joins rule and serial with a NUL, which PostgreSQL text cannot hold, so the table is keyed by
 * (rule, serial) and the key is derived when read. Reading, rebuilding a damaged row and deciding
 * what to write back are AlertStateRows' (src/store/repository-rows.ts).
 */
import { alertKey, parseAlertKey, type AlertState } from '../../alerts/types.js';
import type { DamagedRows } from '../damaged-rows.js';
import { AlertStateRows, type StateDbRow } from '../repository-rows.js';
import type { CycleScope } from '../../alerts/repositories.js';
import type { PostgresDatabase, Transaction } from './database.js';
import { accountOfSql, scopeSql } from './scope.js';

export class PostgresAlertStates {
  private readonly rows: AlertStateRows;

  constructor(
    private readonly db: PostgresDatabase,
    damaged: DamagedRows,
    now: () => number,
  ) {
    this.rows = new AlertStateRows(damaged, now);
  }

  /** Every alert not at rest (of the scope's accounts when given), keyed as the engine keys them (in `tx` when given). */
  async states(tx: Transaction = this.db, scope?: CycleScope): Promise<Map<string, AlertState>> {
    const where = scope === undefined ? null : scopeSql(scope, accountOfSql('serial'), 1);
    const rows = await tx.query<Omit<StateDbRow, 'key'>>(`SELECT rule, serial, status, state FROM alert_states${where === null ? '' : ` WHERE ${where.sql}`}`, where?.params ?? []);
    return this.rows.decode(rows.map((r) => ({ ...r, key: alertKey(r.rule, r.serial) })));
  }

  /** Writes the states that differ from `prev` and deletes the dropped keys, in `tx` (a cycle's). */
  async save(tx: Transaction, prev: ReadonlyMap<string, AlertState>, next: ReadonlyMap<string, AlertState>, dropped: readonly string[]): Promise<void> {
    const { upserts, deletes } = this.rows.changes(prev, next, dropped);
    for (const u of upserts) {
      await tx.query(
        'INSERT INTO alert_states (rule, serial, status, state) VALUES ($1, $2, $3, $4) ON CONFLICT (rule, serial) DO UPDATE SET status = excluded.status, state = excluded.state',
        [u.rule, u.serial, u.status, u.state],
      );
    }
    for (const key of deletes) {
      const { rule, serial } = parseAlertKey(key);
      await tx.query('DELETE FROM alert_states WHERE rule = $1 AND serial = $2', [rule, serial]);
    }
  }
}
