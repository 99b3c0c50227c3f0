/**
 * Who serves each account (replicas, `cluster:`): the one reading of the lease and replica rows
 * (leases.ts) that `boxwatch status` (its "replicas:" lines and the `servedBy` of its JSON), the
 * API's `/api/cluster` and the dashboard's "Replicas" table all show. An account is served by the
 * holder of a lease that has not expired; a lease released, or expired (its holder died, froze or
 * lost the database), means nobody serves it until another replica takes it over.
 */
import { replicaLive, type Lease, type LeaseRepository, type OtherProcess, type Replica } from '../domain/leases.js';
import { isoTime } from '../time-format.js';

/** One account's server, read from the rows at `now`. */
export interface AccountServer {
  account: string;
  /** `serving`: `replica` leads the account; `expired`: its lease ran out unrenewed; `released`: given up. */
  state: 'serving' | 'expired' | 'released';
  /** The lease's holder (null once released). When `expired`, the replica that last held it. */
  replica: string | null;
  /** The holder's host and pid, as it announced itself (null when its replica row is gone). */
  host: string | null;
  pid: number | null;
  /** The holder's last heartbeat (ms, its clock), null when its replica row is gone. */
  heartbeatAt: number | null;
  /** Until when the lease runs (ms); in the past when `expired`. */
  leaseExpiresAt: number | null;
  /** `serving`: another process runs under the holder's replica id too, as the holder's last heartbeat said (coordinator.ts); else null. */
  sharedWith: OtherProcess | null;
}

/** Every account with a lease row, ordered as the rows are (by account). */
export function accountServers(leases: readonly Lease[], replicas: readonly Replica[], now: number): AccountServer[] {
  const byId = new Map(replicas.map((r) => [r.id, r]));
  return leases.map((l) => {
    const r = l.holder === null ? undefined : byId.get(l.holder);
    const state = l.holder === null ? 'released' : l.expiresAt <= now ? 'expired' : 'serving';
    return {
      account: l.account,
      state,
      replica: l.holder,
      host: r?.host ?? null,
      pid: r?.pid ?? null,
      heartbeatAt: r?.beatAt ?? null,
      leaseExpiresAt: l.holder === null ? null : l.expiresAt,
      sharedWith: state === 'serving' ? (r?.sharedWith ?? null) : null,
    };
  });
}

/** Reads the rows and tells who serves each account (empty when nothing was ever leased: no replicas). */
export async function readAccountServers(repo: Pick<LeaseRepository, 'leases' | 'replicas'>, now: number): Promise<AccountServer[]> {
  return accountServers(await repo.leases(), await repo.replicas(), now);
}

/** An account's server in JSON answers (CLI and API): times in ISO 8601 UTC, ages in ms at `now`. */
export interface AccountServerJson {
  account: string;
  state: AccountServer['state'];
  replica: string | null;
  host: string | null;
  pid: number | null;
  heartbeatAt: string | null;
  heartbeatAgeMs: number | null;
  leaseExpiresAt: string | null;
  sharedWith: OtherProcess | null;
}

export function accountServerJson(s: AccountServer, now: number): AccountServerJson {
  return {
    account: s.account,
    state: s.state,
    replica: s.replica,
    host: s.host,
    pid: s.pid,
    heartbeatAt: s.heartbeatAt === null ? null : isoTime(s.heartbeatAt),
    heartbeatAgeMs: s.heartbeatAt === null ? null : Math.max(0, now - s.heartbeatAt),
    leaseExpiresAt: s.leaseExpiresAt === null ? null : isoTime(s.leaseExpiresAt),
    sharedWith: s.sharedWith,
  };
}

/** A replica id two processes run under (two `boxwatch run` given one cluster.replica_id), as its row says. */
export interface ReplicaConflict {
  replica: string;
  /** The process that beat last under the id, and the other one it found. */
  processes: [OtherProcess, OtherProcess];
  /** The row's last heartbeat (ms). */
  heartbeatAt: number;
}

/**
 * The replica ids under which two processes run now: the row's last heartbeat (younger than a
 * lease time: the processes still run) recorded another process (coordinator.ts).
 */
export function replicaConflicts(replicas: readonly Replica[], now: number, leaseMs: number): ReplicaConflict[] {
  return replicas.flatMap((r) =>
    r.sharedWith !== null && replicaLive(r, now, leaseMs) ? [{ replica: r.id, processes: [{ host: r.host, pid: r.pid }, r.sharedWith] as [OtherProcess, OtherProcess], heartbeatAt: r.beatAt }] : [],
  );
}
