/**
 * TestCallsRepo on SQLite (migrations/0010_test_calls.sql), built by SqliteStore
 * (`store.testCalls`). It owns the `test_calls` table and reads `calls` (written by the call sync)
 * to know how each test call ended. The cap check and the reservation are one IMMEDIATE
 * transaction, so two processes (the daemon and `boxwatch test-call run`) never both take the
 * last slot.
 */
import type Database from 'better-sqlite3';
import { capReached, type CapUse, type Reservation, type TestCallRecord, type TestCallsRepo, type TestCallState, type TestCallWithCall } from '../../domain/test-calls.js';

/** A row of `test_calls` (with its call's status and duration when joined); the PostgreSQL store reads the same rows. */
export interface TestCallRow {
  id: number;
  entry: string;
  serial: string;
  agent_id: number;
  day: number;
  at: number;
  state: TestCallState;
  call_id: string | null;
  reason: string | null;
  call_status?: string | null;
  duration_sec?: number | null;
}

export class SqliteTestCallsRepo implements TestCallsRepo {
  private readonly s;

  constructor(private readonly db: Database.Database) {
    const p = (sql: string): Database.Statement => db.prepare(sql);
    this.s = {
      usedBox: p(`SELECT count(*) FROM test_calls WHERE entry = ? AND day = ? AND serial = ? AND state <> 'skipped'`).pluck(),
      usedTotal: p(`SELECT count(*) FROM test_calls WHERE entry = ? AND day = ? AND state <> 'skipped'`).pluck(),
      insert: p('INSERT INTO test_calls (entry, serial, agent_id, day, at, state, reason) VALUES (@entry, @serial, @agentId, @day, @at, @state, @reason)'),
      placed: p(`UPDATE test_calls SET state = 'placed', call_id = ? WHERE id = ?`),
      rejected: p(`UPDATE test_calls SET state = 'rejected', reason = ? WHERE id = ?`),
      recent: p(
        `SELECT t.*, c.status AS call_status, c.duration_sec AS duration_sec FROM (
           SELECT *, row_number() OVER (PARTITION BY serial ORDER BY at DESC, id DESC) AS n FROM test_calls WHERE state <> 'skipped') t
         LEFT JOIN calls c ON c.call_id = t.call_id
         WHERE t.n <= ? ORDER BY t.serial, t.at DESC, t.id DESC`,
      ),
      prune: p('DELETE FROM test_calls WHERE id IN (SELECT id FROM test_calls WHERE at < ? LIMIT 500)'),
    };
  }

  reserve(input: { entry: string; serial: string; agentId: number; day: number; at: number; caps: { perBox: number; total: number } }): Reservation {
    return this.db
      .transaction((): Reservation => {
        const used = this.used(input.entry, input.day, input.serial);
        const cap = capReached(used, input.caps);
        if (cap !== null) return { ok: false, cap, used };
        const id = Number(this.s.insert.run({ ...input, state: 'reserved', reason: null }).lastInsertRowid);
        return { ok: true, id, used: { box: used.box + 1, total: used.total + 1 } };
      })
      .immediate();
  }

  placed(id: number, callId: string): void {
    this.s.placed.run(callId, id);
  }

  rejected(id: number, reason: string): void {
    this.s.rejected.run(reason, id);
  }

  skipped(input: { entry: string; serial: string; agentId: number; day: number; at: number; reason: string }): void {
    this.s.insert.run({ ...input, state: 'skipped' });
  }

  used(entry: string, day: number, serial: string): CapUse {
    return { box: this.s.usedBox.get(entry, day, serial) as number, total: this.s.usedTotal.get(entry, day) as number };
  }

  recent(perBox: number): Map<string, TestCallWithCall[]> {
    return recentBySerial(this.s.recent.iterate(perBox) as Iterable<TestCallRow>);
  }

  entriesOf(callIds: readonly string[]): Map<string, string> {
    const out = new Map<string, string>();
    for (let i = 0; i < callIds.length; i += 500) {
      const chunk = callIds.slice(i, i + 500);
      const rows = this.db.prepare(`SELECT call_id, entry FROM test_calls WHERE call_id IN (${chunk.map(() => '?').join(',')})`).all(...chunk) as { call_id: string; entry: string }[];
      for (const r of rows) out.set(r.call_id, r.entry);
    }
    return out;
  }

  prune(before: number): number {
    let deleted = 0;
    for (;;) {
      const n = this.s.prune.run(before).changes;
      deleted += n;
      if (n < 500) return deleted;
    }
  }
}

/** Joined rows (ordered by box, newest first) grouped per box, as `recent` returns them. */
export function recentBySerial(rows: Iterable<TestCallRow>): Map<string, TestCallWithCall[]> {
  const out = new Map<string, TestCallWithCall[]>();
  for (const r of rows) {
    const call: TestCallWithCall = { ...fromRow(r), callStatus: r.call_status ?? null, durationSec: r.duration_sec ?? null };
    const list = out.get(r.serial);
    if (list) list.push(call);
    else out.set(r.serial, [call]);
  }
  return out;
}

function fromRow(r: TestCallRow): TestCallRecord {
  return { id: r.id, entry: r.entry, serial: r.serial, agentId: r.agent_id, day: r.day, at: r.at, state: r.state, callId: r.call_id, reason: r.reason };
}
