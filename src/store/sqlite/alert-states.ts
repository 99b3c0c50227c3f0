/**
 * Alert state per (rule, box) in `alert_states` (migrations/0002_alerts.sql): the engine's
 * AlertState as JSON, with key, rule, serial and status copied into plain columns.
 *
 * A damaged row (JSON unreadable) is rebuilt from those plain columns rather than dropped, so that
 * what was announced stays announced (docs/reliability.md, "Damaged rows"):
 * - `firing`: taken as announced. It stays firing (no second FIRING) and its RESOLVED is sent when
 *   the condition clears.
 * - `resolved`: taken as resolved and announced; it goes back to rest (no second RESOLVED).
 * - `pending`: the `for` timer restarts at the cycle that found it (nothing was announced yet).
 * The rebuilt state lacks the old value and times (since = the moment it was found); it is
 * written back whole at the next evaluation.
 */
import type Database from 'better-sqlite3';
import { initialState } from '../../alerts/state.js';
import type { AlertState, AlertStatus, Severity } from '../../alerts/types.js';
import { isObject, type DamagedRows } from '../damaged-rows.js';

interface StateRow {
  key: string;
  rule: string;
  serial: string;
  status: string;
  state: string;
}

const looksLikeState = (v: unknown): boolean => isObject(v) && typeof v.key === 'string' && typeof v.status === 'string' && typeof v.rule === 'string';

export class SqliteAlertStates {
  private readonly s;
  /** Keys whose row was damaged and rebuilt: written back at the next save even if unchanged. */
  private readonly rebuilt = new Set<string>();

  constructor(
    db: Database.Database,
    private readonly damaged: DamagedRows,
    private readonly now: () => number,
  ) {
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
    const map = new Map<string, AlertState>();
    for (const row of this.s.all.all() as StateRow[]) {
      const state = this.damaged.read<AlertState>('alert_states', row.key, row.state, looksLikeState) ?? this.rebuild(row);
      map.set(row.key, state);
    }
    return map;
  }

  /** Writes the states that differ from `prev` and deletes the dropped keys. */
  save(prev: ReadonlyMap<string, AlertState>, next: ReadonlyMap<string, AlertState>, dropped: readonly string[]): void {
    for (const [key, state] of next) {
      const text = JSON.stringify(state);
      const before = prev.get(key);
      if (before !== undefined && JSON.stringify(before) === text && !this.rebuilt.has(key)) continue;
      this.s.upsert.run(key, state.rule, state.serial, state.status, text);
      this.rebuilt.delete(key);
    }
    for (const key of dropped) {
      this.s.delete.run(key);
      this.rebuilt.delete(key);
    }
  }

  private rebuild(row: StateRow): AlertState {
    const now = this.now();
    this.rebuilt.add(row.key);
    // The severity and kind are the rule's; the engine takes them from the configuration again.
    const state = initialState({ name: row.rule, kind: '', severity: 'warning' as Severity }, row.serial, now);
    const status = (['pending', 'firing', 'resolved'] as AlertStatus[]).includes(row.status as AlertStatus) ? (row.status as AlertStatus) : 'inactive';
    state.key = row.key;
    state.status = status;
    if (status === 'pending') {
      state.activeSince = now;
      state.activeCycles = 1;
    } else if (status === 'firing') {
      state.activeSince = now;
      state.activeCycles = 1;
      state.firingSince = now;
      state.notifiedFiring = true;
      state.lastNotifiedAt = now;
    } else if (status === 'resolved') {
      state.resolvedAt = now;
    }
    return state;
  }
}
