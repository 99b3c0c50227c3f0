/**
 * The alert history in `alert_transitions`: one row per state change, appended in the cycle's
 * transaction. A row whose JSON columns (value, threshold, held_by) are damaged is set aside.
 */
import type Database from 'better-sqlite3';
import type { TransitionRow } from '../../alerts/repositories.js';
import type { Transition } from '../../alerts/types.js';
import { isScalar, isStringArray, type DamagedRows } from '../damaged-rows.js';

interface TransitionDbRow {
  id: number;
  key: string;
  rule: string;
  serial: string;
  severity: Transition['severity'];
  from_status: Transition['from'];
  to_status: Transition['to'];
  at: number;
  value: string | null;
  threshold: string | null;
  summary: string | null;
  held_back: Transition['heldBack'];
  held_by: string | null;
}

export class SqliteTransitions {
  private readonly s;

  constructor(
    db: Database.Database,
    private readonly damaged: DamagedRows,
  ) {
    this.s = {
      insert: db.prepare(
        'INSERT INTO alert_transitions (key, rule, serial, severity, from_status, to_status, at, value, threshold, summary, held_back, held_by) ' +
          'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      since: db.prepare('SELECT * FROM alert_transitions WHERE at >= ? ORDER BY at, id'),
      ofBoxSince: db.prepare('SELECT * FROM alert_transitions WHERE serial = ? AND at >= ? ORDER BY at, id'),
    };
  }

  append(transitions: readonly Transition[]): void {
    for (const t of transitions) {
      this.s.insert.run(
        t.key,
        t.rule,
        t.serial,
        t.severity,
        t.from,
        t.to,
        t.at,
        JSON.stringify(t.value ?? null),
        JSON.stringify(t.threshold ?? null),
        t.summary,
        t.heldBack,
        t.heldBy.length > 0 ? JSON.stringify(t.heldBy) : null,
      );
    }
  }

  transitionsSince(since: number, serial?: string): TransitionRow[] {
    const out: TransitionRow[] = [];
    const rows = serial === undefined ? this.s.since.all(since) : this.s.ofBoxSince.all(serial, since);
    for (const r of rows as TransitionDbRow[]) {
      const value = this.damaged.read<TransitionRow['value']>('alert_transitions', r.id, r.value, isScalar, null);
      const threshold = this.damaged.read<TransitionRow['threshold']>('alert_transitions', r.id, r.threshold, isScalar, null);
      const heldBy = this.damaged.read<string[]>('alert_transitions', r.id, r.held_by, isStringArray, []);
      if (value === undefined || threshold === undefined || heldBy === undefined) continue;
      out.push({
        id: r.id,
        key: r.key,
        rule: r.rule,
        kind: '',
        serial: r.serial,
        severity: r.severity,
        from: r.from_status,
        to: r.to_status,
        at: r.at,
        value,
        threshold,
        summary: r.summary,
        heldBack: r.held_back,
        heldBy,
      });
    }
    return out;
  }
}
