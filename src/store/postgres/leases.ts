/**
 * Replicas and per-account leases in PostgreSQL (`replicas`, `leases`,
 * migrations/postgres/0006_leases.sql), implementing the cluster's LeaseRepository
 * (src/domain/leases.ts) for any number of replicas on any number of hosts.
 *
 * `acquire` is one INSERT ... ON CONFLICT DO UPDATE ... WHERE free or expired: two replicas racing
 * for a lease are serialized on its row, the second finds it taken. `checkFence` is what the
 * store's fenced writes run first, in their own transaction: it reads the lease row FOR SHARE, so
 * a takeover (an UPDATE of that row) waits until the write in flight has committed, and every
 * write of the old holder after the takeover is refused (LeaseLostError). No advisory lock is
 * involved: nothing can be left behind by a lost connection.
 */
import { LeaseLostError, type Fence, type Lease, type PreviousBeat, type Replica, type ReplicaInfo } from '../../domain/leases.js';
import { REPLICA_COLUMNS, toLease, toReplica, type LeaseDbRow, type ReplicaDbRow } from '../repository-rows.js';
import type { PostgresDatabase, Transaction } from './database.js';


const LEASE_COLUMNS = 'account, holder, token, expires_at';

/** Throws LeaseLostError unless `fence` still holds its account's lease; holds the lease row (FOR SHARE) until `tx` ends. */
export async function checkFence(tx: Transaction, fence: Fence): Promise<void> {
  const held = await tx.query('SELECT 1 FROM leases WHERE account = $1 AND holder = $2 AND token = $3 FOR SHARE', [fence.account, fence.holder, fence.token]);
  if (held.length === 0) throw new LeaseLostError(fence);
}

export class PostgresLeases {
  constructor(private readonly db: PostgresDatabase) {}

  async heartbeat(replica: ReplicaInfo, now: number): Promise<PreviousBeat | null> {
    // The row as it was before this statement (the CTE reads the statement's snapshot).
    const [row] = await this.db.query<{ host: string | null; pid: number | null; instance: string | null }>(
      `WITH before AS (SELECT host, pid, instance FROM replicas WHERE id = $1)
       INSERT INTO replicas (id, host, pid, started_at, beat_at, instance, shared_host, shared_pid, archive) VALUES ($1, $2, $3, $4, $4, $5, $6, $7, $8)
       ON CONFLICT (id) DO UPDATE SET beat_at = EXCLUDED.beat_at, host = EXCLUDED.host, pid = EXCLUDED.pid, instance = EXCLUDED.instance,
         shared_host = EXCLUDED.shared_host, shared_pid = EXCLUDED.shared_pid, archive = EXCLUDED.archive
       RETURNING (SELECT host FROM before) AS host, (SELECT pid FROM before) AS pid, (SELECT instance FROM before) AS instance`,
      [replica.id, replica.host, replica.pid, now, replica.instance ?? null, replica.sharedWith?.host ?? null, replica.sharedWith?.pid ?? null, replica.archive ?? null],
    );
    return row === undefined || row.host === null ? null : { host: row.host, pid: Number(row.pid), instance: row.instance };
  }

  async leave(replicaId: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query('UPDATE leases SET holder = NULL WHERE holder = $1', [replicaId]);
      await tx.query('DELETE FROM replicas WHERE id = $1', [replicaId]);
    });
  }

  async replicas(): Promise<Replica[]> {
    const rows = await this.db.query<ReplicaDbRow>(`SELECT ${REPLICA_COLUMNS} FROM replicas ORDER BY id COLLATE "C"`);
    return rows.map(toReplica);
  }

  async acquire(account: string, holder: string, now: number, ttlMs: number): Promise<Lease | null> {
    return this.db.transaction(async (tx) => {
      const [row] = await tx.query<LeaseDbRow>(
        'INSERT INTO leases (account, holder, token, expires_at, acquired_at) VALUES ($1, $2, 1, $3, $4) ' +
          'ON CONFLICT (account) DO UPDATE SET holder = EXCLUDED.holder, token = leases.token + 1, expires_at = EXCLUDED.expires_at, acquired_at = EXCLUDED.acquired_at ' +
          `WHERE leases.holder IS NULL OR leases.expires_at <= EXCLUDED.acquired_at RETURNING ${LEASE_COLUMNS}`,
        [account, holder, now + ttlMs, now],
      );
      if (row === undefined) return null;
      await tx.query("UPDATE outbox SET status = 'pending', lease_until = NULL WHERE account = $1 AND status = 'sending'", [account]);
      return toLease(row);
    });
  }

  async renew(fence: Fence, now: number, ttlMs: number): Promise<Lease | null> {
    const [row] = await this.db.query<LeaseDbRow>(`UPDATE leases SET expires_at = $1 WHERE account = $2 AND holder = $3 AND token = $4 RETURNING ${LEASE_COLUMNS}`, [
      now + ttlMs,
      fence.account,
      fence.holder,
      fence.token,
    ]);
    return row === undefined ? null : toLease(row);
  }

  async release(fence: Fence): Promise<boolean> {
    const rows = await this.db.query('UPDATE leases SET holder = NULL WHERE account = $1 AND holder = $2 AND token = $3 RETURNING account', [fence.account, fence.holder, fence.token]);
    return rows.length > 0;
  }

  /** Every account's lease; within `tx` when given (the cycle's transaction reads them: CycleView.leases). */
  async leases(tx: Pick<Transaction, 'query'> = this.db): Promise<Lease[]> {
    return (await tx.query<LeaseDbRow>(`SELECT ${LEASE_COLUMNS} FROM leases ORDER BY account COLLATE "C"`)).map(toLease);
  }
}
