/**
 * TestCallsRepo on PostgreSQL (migrations/postgres/0003_calls.sql), built by PostgresStore
 * (`store.testCalls`), answering with Promises. The same rows and rules as SQLite
 * (src/store/sqlite/test-calls.ts, whose row mapping it reuses).
 *
 * The caps hold across processes and replicas: `reserve` counts the day's calls and writes the
 * `reserved` row in one transaction that first takes a transaction-scoped advisory lock on the
 * entry, so two reservations of the same entry run one after the other (the second one counts the
 * first one's row). The lock goes with the transaction, or with the connection if it is lost: it
 * can never be left behind.
 */
import { recentBySerial, type TestCallRow } from '../sqlite/test-calls.js';
import { capReached, type CapUse, type Reservation, type TestCallsRepo, type TestCallWithCall } from '../../domain/test-calls.js';
import type { PostgresDatabase, Transaction } from './database.js';

/** First key of the advisory lock of a reservation ('tcal'); the second is the entry's hash. */
const RESERVE_LOCK = 0x7463616c;
const BATCH = 500;

const INSERT = 'INSERT INTO test_calls (entry, serial, agent_id, day, at, state, reason) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id';

export class PostgresTestCallsRepo implements TestCallsRepo {
  constructor(private readonly db: PostgresDatabase) {}

  reserve(input: { entry: string; serial: string; agentId: number; day: number; at: number; caps: { perBox: number; total: number } }): Promise<Reservation> {
    return this.db.transaction(async (tx): Promise<Reservation> => {
      await tx.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [RESERVE_LOCK, input.entry]);
      const used = await usedIn(tx, input.entry, input.day, input.serial);
      const cap = capReached(used, input.caps);
      if (cap !== null) return { ok: false, cap, used };
      const [row] = await tx.query<{ id: number }>(INSERT, [input.entry, input.serial, input.agentId, input.day, input.at, 'reserved', null]);
      if (row === undefined) throw new Error('test_calls insert returned no id');
      return { ok: true, id: row.id, used: { box: used.box + 1, total: used.total + 1 } };
    });
  }

  async placed(id: number, callId: string): Promise<void> {
    await this.db.query(`UPDATE test_calls SET state = 'placed', call_id = $1 WHERE id = $2`, [callId, id]);
  }

  async rejected(id: number, reason: string): Promise<void> {
    await this.db.query(`UPDATE test_calls SET state = 'rejected', reason = $1 WHERE id = $2`, [reason, id]);
  }

  async skipped(input: { entry: string; serial: string; agentId: number; day: number; at: number; reason: string }): Promise<void> {
    await this.db.query(INSERT, [input.entry, input.serial, input.agentId, input.day, input.at, 'skipped', input.reason]);
  }

  used(entry: string, day: number, serial: string): Promise<CapUse> {
    return usedIn(this.db, entry, day, serial);
  }

  async recent(perBox: number): Promise<Map<string, TestCallWithCall[]>> {
    const rows = await this.db.query<TestCallRow>(
      `SELECT t.id, t.entry, t.serial, t.agent_id, t.day, t.at, t.state, t.call_id, t.reason, c.status AS call_status, c.duration_sec AS duration_sec FROM (
         SELECT *, row_number() OVER (PARTITION BY serial ORDER BY at DESC, id DESC) AS n FROM test_calls WHERE state <> 'skipped') t
       LEFT JOIN calls c ON c.call_id = t.call_id
       WHERE t.n <= $1 ORDER BY t.serial COLLATE "C", t.at DESC, t.id DESC`,
      [perBox],
    );
    return recentBySerial(rows);
  }

  async entriesOf(callIds: readonly string[]): Promise<Map<string, string>> {
    if (callIds.length === 0) return new Map();
    const rows = await this.db.query<{ call_id: string; entry: string }>('SELECT call_id, entry FROM test_calls WHERE call_id = ANY($1::text[])', [callIds]);
    return new Map(rows.map((r) => [r.call_id, r.entry]));
  }

  /** In batches of 500 rows, each its own statement, so a large backlog never holds locks for long. */
  async prune(before: number): Promise<number> {
    let deleted = 0;
    for (;;) {
      const rows = await this.db.query<{ id: number }>('DELETE FROM test_calls WHERE id IN (SELECT id FROM test_calls WHERE at < $1 LIMIT $2) RETURNING id', [before, BATCH]);
      deleted += rows.length;
      if (rows.length < BATCH) return deleted;
    }
  }
}

/** The calls of an entry on a day (the box's, and all boxes'), skipped attempts not counted. */
async function usedIn(q: Pick<Transaction, 'query'>, entry: string, day: number, serial: string): Promise<CapUse> {
  const [row] = await q.query<CapUse>(
    `SELECT count(*) FILTER (WHERE serial = $3)::bigint AS box, count(*)::bigint AS total FROM test_calls WHERE entry = $1 AND day = $2 AND state <> 'skipped'`,
    [entry, day, serial],
  );
  return row ?? { box: 0, total: 0 };
}
