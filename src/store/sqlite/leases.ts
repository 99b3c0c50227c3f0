/**
 * Replicas and per-account leases in SQLite (`replicas`, `leases`, migrations/0012_leases.sql),
 * implementing the cluster's LeaseRepository (src/domain/leases.ts): replicas on one machine
 * sharing one file, under the same contract as PostgreSQL. Every read-then-write is an IMMEDIATE
 * transaction, so two replicas' acquisitions of one lease are serialized by SQLite's write lock.
 * `checkFence` is what the store's fenced writes run first, inside their own transaction.
 */
import type Database from 'better-sqlite3';
import { LeaseLostError, type Fence, type Lease, type PreviousBeat, type Replica, type ReplicaInfo } from '../../domain/leases.js';
import { REPLICA_COLUMNS, toLease, toReplica, type LeaseDbRow, type ReplicaDbRow } from '../repository-rows.js';


/** Throws LeaseLostError unless `fence` still holds its account's lease; run inside the writing transaction. */
export function checkFence(db: Database.Database, fence: Fence): void {
  const held = db.prepare('SELECT 1 FROM leases WHERE account = ? AND holder = ? AND token = ?').get(fence.account, fence.holder, fence.token);
  if (held === undefined) throw new LeaseLostError(fence);
}

export class SqliteLeases {
  private readonly s;

  constructor(private readonly db: Database.Database) {
    this.s = {
      beat: db.prepare(
        'INSERT INTO replicas (id, host, pid, started_at, beat_at, instance, shared_host, shared_pid, archive) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ' +
          'ON CONFLICT (id) DO UPDATE SET beat_at = excluded.beat_at, host = excluded.host, pid = excluded.pid, instance = excluded.instance, shared_host = excluded.shared_host, shared_pid = excluded.shared_pid, archive = excluded.archive',
      ),
      lastBeat: db.prepare('SELECT host, pid, instance FROM replicas WHERE id = ?'),
      leaveReplica: db.prepare('DELETE FROM replicas WHERE id = ?'),
      releaseAll: db.prepare('UPDATE leases SET holder = NULL WHERE holder = ?'),
      replicas: db.prepare(`SELECT ${REPLICA_COLUMNS} FROM replicas ORDER BY id`),
      acquire: db.prepare(
        'INSERT INTO leases (account, holder, token, expires_at, acquired_at) VALUES (?, ?, 1, ?, ?) ' +
          'ON CONFLICT (account) DO UPDATE SET holder = excluded.holder, token = leases.token + 1, expires_at = excluded.expires_at, acquired_at = excluded.acquired_at ' +
          'WHERE leases.holder IS NULL OR leases.expires_at <= excluded.acquired_at',
      ),
      voidClaims: db.prepare("UPDATE outbox SET status = 'pending', lease_until = NULL WHERE account = ? AND status = 'sending'"),
      lease: db.prepare('SELECT account, holder, token, expires_at FROM leases WHERE account = ?'),
      renew: db.prepare('UPDATE leases SET expires_at = ? WHERE account = ? AND holder = ? AND token = ?'),
      release: db.prepare('UPDATE leases SET holder = NULL WHERE account = ? AND holder = ? AND token = ?'),
      leases: db.prepare('SELECT account, holder, token, expires_at FROM leases ORDER BY account'),
    };
  }

  heartbeat(replica: ReplicaInfo, now: number): PreviousBeat | null {
    return this.db
      .transaction(() => {
        const before = (this.s.lastBeat.get(replica.id) as PreviousBeat | undefined) ?? null;
        this.s.beat.run(replica.id, replica.host, replica.pid, now, now, replica.instance ?? null, replica.sharedWith?.host ?? null, replica.sharedWith?.pid ?? null, replica.archive ?? null);
        return before;
      })
      .immediate();
  }

  leave(replicaId: string): void {
    this.db
      .transaction(() => {
        this.s.releaseAll.run(replicaId);
        this.s.leaveReplica.run(replicaId);
      })
      .immediate();
  }

  replicas(): Replica[] {
    return (this.s.replicas.all() as ReplicaDbRow[]).map(toReplica);
  }

  acquire(account: string, holder: string, now: number, ttlMs: number): Lease | null {
    return this.db
      .transaction(() => {
        if (this.s.acquire.run(account, holder, now + ttlMs, now).changes === 0) return null;
        this.s.voidClaims.run(account);
        return toLease(this.s.lease.get(account) as LeaseDbRow);
      })
      .immediate();
  }

  renew(fence: Fence, now: number, ttlMs: number): Lease | null {
    return this.db
      .transaction(() => {
        if (this.s.renew.run(now + ttlMs, fence.account, fence.holder, fence.token).changes === 0) return null;
        return toLease(this.s.lease.get(fence.account) as LeaseDbRow);
      })
      .immediate();
  }

  release(fence: Fence): boolean {
    return this.s.release.run(fence.account, fence.holder, fence.token).changes > 0;
  }

  leases(): Lease[] {
    return (this.s.leases.all() as LeaseDbRow[]).map(toLease);
  }
}
