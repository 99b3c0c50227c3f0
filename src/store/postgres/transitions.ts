/**
 * The alert history in PostgreSQL (`alert_transitions`): one row per state change, appended in the
 * cycle's transaction; rows as in SQLite (a row whose JSON columns are damaged is set aside),
 * except the key column: derived from rule and serial (see alert-states.ts).
 */
import type { TransitionRow } from '../../alerts/repositories.js';
import { alertKey, type Transition } from '../../alerts/types.js';
import type { DamagedRows } from '../damaged-rows.js';
import { TRANSITION_COLUMNS, toTransition, transitionValues, type TransitionDbRow } from '../repository-rows.js';
import type { PostgresDatabase, Transaction } from './database.js';

/** The SQLite column list without `key` (its first column). */
const COLUMNS = TRANSITION_COLUMNS.replace(/^key, /, '');
const PLACEHOLDERS = Array.from({ length: 11 }, (_, i) => `$${i + 1}`).join(', ');
const withKey = (r: Omit<TransitionDbRow, 'key'>): TransitionDbRow => ({ ...r, key: alertKey(r.rule, r.serial) });

export class PostgresTransitions {
  constructor(
    private readonly db: PostgresDatabase,
    private readonly damaged: DamagedRows,
  ) {}

  /** Appends transitions in `tx` (a cycle's). */
  async append(tx: Transaction, transitions: readonly Transition[]): Promise<void> {
    for (const t of transitions) await tx.query(`INSERT INTO alert_transitions (${COLUMNS}) VALUES (${PLACEHOLDERS})`, transitionValues(t).slice(1));
  }

  /** Transitions at or after `since` (of one box when `serial` is given), oldest first. */
  async transitionsSince(since: number, serial?: string): Promise<TransitionRow[]> {
    const rows =
      serial === undefined
        ? await this.db.query<Omit<TransitionDbRow, 'key'>>('SELECT * FROM alert_transitions WHERE at >= $1 ORDER BY at, id', [since])
        : await this.db.query<Omit<TransitionDbRow, 'key'>>('SELECT * FROM alert_transitions WHERE serial = $1 AND at >= $2 ORDER BY at, id', [serial, since]);
    return rows.flatMap((r) => toTransition(withKey(r), this.damaged) ?? []);
  }
}
