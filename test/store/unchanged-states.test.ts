/**
 * An alert state that a cycle leaves as it was is not written again: the daemon does not rewrite
 * every pending or firing alert of the fleet at every cycle, only those that changed (a new
 * status, a new value). What the database holds is still right after a restart: a pending alert's
 * `for` timer runs from the cycle that started it, a firing alert is not announced twice, and a
 * gateway alert that needs several failed cycles in a row counts on across the restart.
 *
 * The cycle's alert stage is the daemon's own (AlertPipeline.decide inside commitCycle) on a real
 * SQLite file; the writes to `alert_states` are counted by a trigger put into that file by
 * another connection.
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AlertPipeline } from '../../src/alerts/pipeline.js';
import { parseConfig } from '../../src/config/index.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import type { CycleWrite } from '../../src/domain/store.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { failedCycle, okCycle, snap, tempDir } from './model.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');
const config = parseConfig(
  [
    'gateway: { secret_key: k }',
    'rules:',
    '  - { name: box-offline, kind: disconnected, severity: critical, for: 2m }',
    '  - { name: signal-weak, kind: weak_signal, below_dbm: -100, severity: warning }',
    'alerting: { group_wait: 0s, gateway: { unreachable_after: 3 } }',
    'notifiers: [{ name: console, type: console }]',
    '',
  ].join('\n'),
  {},
  'test',
);
const pipeline = new AlertPipeline({ config });

let tmp: ReturnType<typeof tempDir>;
let clock: FakeClock;
let store: SqliteStore;
const dbPath = (): string => join(tmp.dir, 'boxwatch.db');
beforeEach(() => {
  tmp = tempDir();
  clock = new FakeClock(T0);
  store = openStore(dbPath(), { clock });
  // Every insert or update of an alert state row leaves a line here.
  const other = new Database(dbPath());
  other.exec(`CREATE TABLE state_writes (key TEXT, status TEXT);
    CREATE TRIGGER state_inserted AFTER INSERT ON alert_states BEGIN INSERT INTO state_writes VALUES (new.key, new.status); END;
    CREATE TRIGGER state_updated AFTER UPDATE ON alert_states BEGIN INSERT INTO state_writes VALUES (new.key, new.status); END;`);
  other.close();
});
afterEach(() => {
  store.close();
  tmp.cleanup();
});

/** One cycle; returns the notifications it queued, as `rule status`. */
function commit(t: number, write: CycleWrite): string[] {
  clock.set(t);
  const { result } = store.commitCycle(write, t, (view) => {
    const decided = pipeline.decide(write.cycle, view, t, null);
    return { alerts: decided.alerts, result: decided.alerts.queued.map((q) => `${q.item.rule} ${q.item.status}`) };
  });
  return result;
}

/** A cycle at `t` with BX-1 connected (last seen now) or not (last seen at T0), at this signal. */
const cycle = (t: number, connected: boolean, signal = -80): string[] =>
  commit(t, okCycle(t, [snap('BX-1', { connected, signal, lastSeen: connected ? t : T0 })]));

/** The state rows written since the last call, as `key status`. */
function newWrites(): string[] {
  const db = new Database(dbPath());
  try {
    const rows = db.prepare('SELECT key, status FROM state_writes ORDER BY rowid').all() as { key: string; status: string }[];
    db.exec('DELETE FROM state_writes');
    return rows.map((r) => `${r.key} ${r.status}`);
  } finally {
    db.close();
  }
}

/** Closes the store and opens it again on the same file, as a restarted daemon does. */
function restart(): void {
  store.close();
  store = openStore(dbPath(), { clock });
}

const statuses = (): string[] => [...store.alertStates.states().values()].map((s) => `${s.rule} ${s.status}`).sort();

describe('alert states a cycle leaves as they were', () => {
  it('are not written again; a change of status or value is', () => {
    cycle(T0, false);
    expect(newWrites()).toEqual(['box-offline\u0000BX-1 pending']);
    cycle(T0 + 30_000, false);
    cycle(T0 + 60_000, false);
    expect(newWrites()).toEqual([]);
    expect(cycle(T0 + 120_000, false)).toEqual(['box-offline firing']);
    expect(newWrites()).toEqual(['box-offline\u0000BX-1 firing']);
    cycle(T0 + 150_000, false);
    cycle(T0 + 180_000, false);
    expect(newWrites()).toEqual([]);
    // A weak signal: its value is part of the state, written when it moves and only then.
    cycle(T0 + 210_000, true, -105);
    expect(newWrites().filter((w) => w.startsWith('signal-weak'))).toEqual(['signal-weak\u0000BX-1 firing']);
    cycle(T0 + 240_000, true, -105);
    expect(newWrites()).toEqual([]);
    cycle(T0 + 270_000, true, -107);
    expect(newWrites()).toEqual(['signal-weak\u0000BX-1 firing']);
  });

  it('are right after a restart: the for timer runs from the first active cycle, a firing alert is not announced twice', () => {
    cycle(T0, false);
    cycle(T0 + 30_000, false);
    cycle(T0 + 60_000, false);
    restart();
    expect(cycle(T0 + 90_000, false)).toEqual([]);
    expect(statuses()).toEqual(['box-offline pending']);
    // 2 minutes after the first active cycle (before the restart), not after the restart.
    expect(cycle(T0 + 120_000, false)).toEqual(['box-offline firing']);
    cycle(T0 + 150_000, false);
    restart();
    expect(cycle(T0 + 180_000, false)).toEqual([]);
    expect(statuses()).toEqual(['box-offline firing']);
    expect(cycle(T0 + 210_000, true)).toEqual(['box-offline resolved']);
  });

  it('a gateway alert counts its failed cycles in a row across a restart (unreachable_after: 3)', () => {
    cycle(T0, true);
    expect(commit(T0 + 30_000, failedCycle(T0 + 30_000))).toEqual([]);
    expect(commit(T0 + 60_000, failedCycle(T0 + 60_000))).toEqual([]);
    restart();
    expect(commit(T0 + 90_000, failedCycle(T0 + 90_000))).toEqual(['gateway_unreachable firing']);
    expect(commit(T0 + 120_000, failedCycle(T0 + 120_000))).toEqual([]);
    expect(newWrites().filter((w) => w.startsWith('gateway_unreachable'))).toEqual([
      'gateway_unreachable pending',
      'gateway_unreachable pending',
      'gateway_unreachable firing',
    ]);
  });
});
