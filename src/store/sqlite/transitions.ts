/**
 * The alert history in `alert_transitions`: one row per state change, appended in the cycle's
 * transaction. A row whose JSON columns (value, threshold, held_by) are damaged is set aside.
 */
import type Database from 'better-sqlite3';
import type { TransitionRow } from '../../alerts/repositories.js';
import type { Transition } from '../../alerts/types.js';
import type { DamagedRows } from '../damaged-rows.js';
import { TRANSITION_COLUMNS, toTransition, transitionValues, type TransitionDbRow } from '../repository-rows.js';

export class SqliteTransitions {
  private readonly s;

  constructor(
    db: Database.Database,
    private readonly damaged: DamagedRows,
  ) {
    this.s = {
      insert: db.prepare(
        `INSERT INTO alert_transitions (${TRANSITION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      since: db.prepare('SELECT * FROM alert_transitions WHERE at >= ? ORDER BY at, id'),
      ofBoxSince: db.prepare('SELECT * FROM alert_transitions WHERE serial = ? AND at >= ? ORDER BY at, id'),
    };
  }

  append(transitions: readonly Transition[]): void {
    for (const t of transitions) this.s.insert.run(...transitionValues(t));
  }

  transitionsSince(since: number, serial?: string): TransitionRow[] {
    const rows = serial === undefined ? this.s.since.all(since) : this.s.ofBoxSince.all(serial, since);
    return (rows as TransitionDbRow[]).flatMap((r) => toTransition(r, this.damaged) ?? []);
  }
}
