/**
 * A damaged alert state (unreadable JSON in `alert_states`) keeps what was announced: it is rebuilt
 * from the row's plain columns (status, rule, serial). Firing stays firing and owes its RESOLVED;
 * resolved goes back to rest without a second RESOLVED; pending restarts its `for` timer at the
 * cycle that found it (nothing was announced yet). The cycle's alert stage is the daemon's own
 * (AlertPipeline.decide inside commitCycle) on a real SQLite file. (The firing case end to end:
 * test/e2e/damaged-rows.e2e.test.ts.)
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AlertPipeline } from '../../src/alerts/pipeline.js';
import { parseConfig } from '../../src/config/index.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { okCycle, snap, tempDir } from './model.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');
const config = parseConfig(
  'gateway: { secret_key: k }\nrules:\n  - { name: box-offline, kind: disconnected, severity: critical, for: 2m }\nalerting: { group_wait: 0s }\nnotifiers: [{ name: console, type: console }]\n',
  {},
  'test',
);
const pipeline = new AlertPipeline({ config });

let tmp: ReturnType<typeof tempDir>;
let clock: FakeClock;
let store: SqliteStore;
beforeEach(() => {
  tmp = tempDir();
  clock = new FakeClock(T0);
  store = openStore(join(tmp.dir, 'boxwatch.db'), { clock });
});
afterEach(() => {
  store.close();
  tmp.cleanup();
});

/** One cycle at `t` with BX-1 connected or not; returns the notifications it queued, as `status`. */
function cycle(t: number, connected: boolean): string[] {
  clock.set(t);
  const write = okCycle(t, [snap('BX-1', { connected, lastSeen: t })]);
  const { result } = store.commitCycle(write, t, (view) => {
    const decided = pipeline.decide(write.cycle, view, t, null);
    return { alerts: decided.alerts, result: decided.alerts.queued.map((q) => q.item.status) };
  });
  return result;
}

/** Damages every state row from another connection (another process, or a repair gone wrong), as the daemon runs. */
const damage = (): void => {
  const other = new Database(join(tmp.dir, 'boxwatch.db'));
  other.prepare("UPDATE alert_states SET state = '{not json'").run();
  other.close();
};
const status = (): string[] => [...store.alertStates.states().values()].map((s) => s.status);

describe('a damaged alert state', () => {
  it('firing: stays firing without a second FIRING, and its RESOLVED is sent when the box is back', () => {
    cycle(T0, false);
    expect(cycle(T0 + 120_000, false)).toEqual(['firing']);
    damage();
    expect(cycle(T0 + 150_000, false)).toEqual([]);
    expect(cycle(T0 + 180_000, false)).toEqual([]);
    expect(status()).toEqual(['firing']);
    expect(cycle(T0 + 210_000, true)).toEqual(['resolved']);
    expect(store.damagedRows.counts()).toEqual([{ table: 'alert_states', count: 1 }]);
  });

  it('resolved: goes back to rest without a second RESOLVED', () => {
    cycle(T0, false);
    cycle(T0 + 120_000, false);
    expect(cycle(T0 + 150_000, true)).toEqual(['resolved']);
    expect(status()).toEqual(['resolved']);
    damage();
    expect(cycle(T0 + 180_000, true)).toEqual([]);
    expect(status()).toEqual([]);
  });

  it('pending: the for timer restarts at the cycle that found it; FIRING once it has run again', () => {
    cycle(T0, false);
    expect(status()).toEqual(['pending']);
    damage();
    expect(cycle(T0 + 60_000, false)).toEqual([]); // rebuilt: pending since now
    expect(cycle(T0 + 120_000, false)).toEqual([]); // 2 m after the first sighting, but the timer restarted
    expect(status()).toEqual(['pending']);
    expect(cycle(T0 + 180_000, false)).toEqual(['firing']);
  });
});
