/**
 * Replicas and per-account leases: the repository the cluster coordinator (coordinator.ts) owns,
 * implemented by the SQLite store (src/store/sqlite/leases.ts), the PostgreSQL store
 * (src/store/postgres/leases.ts) and in memory for unit tests (test/cluster/memory-leases.ts);
 * test/contract/leases.contract.ts holds all three to the same rules.
 *
 * - A replica announces itself (id, host, pid, and a random token of its process's life) and
 *   refreshes its heartbeat (`heartbeat`), which says whose heartbeat it replaced: two processes
 *   given one `replica_id` by mistake tell so (coordinator.ts), and record it with their next
 *   heartbeats (`sharedWith`), for `boxwatch status`.
 * - A lease gives one account's work (poll, evaluate, deliver) to one replica until `expiresAt`.
 *   `acquire` takes a lease that is free or expired; `renew` extends a lease its holder still
 *   has; `release` gives it up. Every change of holder raises the account's fencing `token`.
 * - A `Fence` (account, holder, token) is what the holder's writes carry: the store checks it in
 *   the same transaction as the write (the cycle write, the outbox claim, the group queue's
 *   release) and refuses with `LeaseLostError` when the lease changed hands meanwhile. Expiry
 *   times only decide when a lease may be taken (hosts' clocks are assumed to agree within
 *   seconds); that two holders never both write is the token's doing, not the clocks'.
 * - Taking a lease voids the outbox claims of the account's previous holder (their rows are due
 *   again at once), so a message that holder had claimed but not sent goes out without waiting
 *   for its claim to expire: at most one send in flight at a death is sent twice.
 */
import type { Awaitable } from '../awaitable.js';

/** A `boxwatch run` process as it announces itself. */
export interface ReplicaInfo {
  /** Unique per process life (host, pid and a random part), or `cluster.replica_id`. */
  id: string;
  host: string;
  pid: number;
  /** A random token of this process's life: tells two processes apart that were given one `replica_id`. */
  instance?: string;
  /** Another process this one found running under its id (coordinator.ts); null or absent: none. */
  sharedWith?: OtherProcess | null;
  /** The id of the archive directory it archives recordings into (src/archive/identity.ts); null or absent: none (yet). */
  archive?: string | null;
}

/** A process as another one saw it. */
export interface OtherProcess {
  host: string;
  pid: number;
}

/** Who last beat under a replica id, as a heartbeat found it (and replaced). */
export interface PreviousBeat {
  host: string;
  pid: number;
  /** Null: a process of before instance tokens, or one that announced none. */
  instance: string | null;
}

export interface Replica extends ReplicaInfo {
  /** Its first heartbeat (ms). */
  startedAt: number;
  /** Its last heartbeat (ms, its own clock). */
  beatAt: number;
  /** As its last heartbeat said: another process runs under its id (null: none found). */
  sharedWith: OtherProcess | null;
  /** As its last heartbeat said: its archive directory's id (null: none). */
  archive: string | null;
}

/** A replica is taken for alive while its last heartbeat is younger than a lease time. */
export function replicaLive(replica: Pick<Replica, 'beatAt'>, now: number, leaseMs: number): boolean {
  return replica.beatAt > now - leaseMs;
}

/** An archive directory a live replica announces (ReplicaInfo.archive). */
export interface ReplicaArchive {
  replica: string;
  archive: string;
}

/**
 * The archive directories that the live replicas other than `self` announce with their
 * heartbeats: while one of them is not this replica's own, archive.dir is not one storage shared
 * by the replicas (src/archive/archiver.ts, `unshared_dir`).
 */
export function otherReplicaArchives(replicas: readonly Replica[], self: string, now: number, leaseMs: number): ReplicaArchive[] {
  return replicas.filter((r) => r.id !== self && r.archive !== null && replicaLive(r, now, leaseMs)).map((r) => ({ replica: r.id, archive: r.archive as string }));
}

/** One account's lease. A free lease has holder null (released; its token and expiry stay). */
export interface Lease {
  account: string;
  holder: string | null;
  /** Raised at every change of holder; never goes down. */
  token: number;
  /**
   * Until when the holder may work without renewing (ms, the holder's clock). A released lease
   * keeps the expiry of its last tenure, so how long ago the account was worked stays known
   * (`leaseInUse`); it may be taken at once all the same.
   */
  expiresAt: number;
}

/** What a holder's writes carry: the store refuses them unless the lease still has this holder and token. */
export interface Fence {
  account: string;
  holder: string;
  token: number;
}

export interface LeaseRepository {
  /** Announces `replica` or refreshes its heartbeat at `now`; returns who had beaten last under its id (null: nobody, or it left). */
  heartbeat(replica: ReplicaInfo, now: number): Awaitable<PreviousBeat | null>;
  /** The replica stops: its row goes and its leases are released (as `release` does). */
  leave(replicaId: string): Awaitable<void>;
  /** Every announced replica (live or not: the caller judges by `beatAt`), ordered by id. */
  replicas(): Awaitable<Replica[]>;
  /**
   * Takes the lease of `account` for `holder` until `now + ttlMs` when it is free, expired at
   * `now`, or has no row yet. The token goes up by one (a new tenure, even for the same holder).
   * Voids the outbox claims of the account. Null when another holder's lease runs.
   */
  acquire(account: string, holder: string, now: number, ttlMs: number): Awaitable<Lease | null>;
  /** Extends the lease to `now + ttlMs` if `fence` still holds it (token unchanged); null when lost. */
  renew(fence: Fence, now: number, ttlMs: number): Awaitable<Lease | null>;
  /** Gives the lease up if `fence` still holds it (the token and expiry stay, so the next holder's token is higher). */
  release(fence: Fence): Awaitable<boolean>;
  /** Every account's lease, ordered by account. */
  leases(): Awaitable<Lease[]>;
}

/** A write was refused: the account's lease is no longer the writer's (another replica took it over). */
export class LeaseLostError extends Error {
  readonly code = 'lease_lost';
  constructor(readonly fence: Fence) {
    super(`the lease of account "${fence.account}" is no longer held by ${fence.holder} with token ${fence.token}: another replica took it over`);
    this.name = 'LeaseLostError';
  }
}

export function isLeaseLost(err: unknown): err is LeaseLostError {
  return err instanceof LeaseLostError;
}

/** The fence of a lease its holder got back from acquire or renew. */
export function fenceOf(lease: Lease & { holder: string }): Fence {
  return { account: lease.account, holder: lease.holder, token: lease.token };
}

/**
 * Whether an account's lease is, or was within `leaseMs`, worked by some replica: its lease runs,
 * or it expired or was released less than a lease time ago (its holder may renew it yet, or
 * another replica is about to take it over). False with no lease at all. An account in use so is
 * never retired by a replica whose own `gateways:` lacks it (src/alerts/pipeline.ts): during a
 * rolling reload the replicas' lists differ, and another replica may be polling it right now.
 */
export function leaseInUse(lease: Lease | undefined, now: number, leaseMs: number): boolean {
  return lease !== undefined && lease.expiresAt + leaseMs > now;
}

/** A lease's length when `cluster.lease` is not set. */
export const DEFAULT_LEASE_MS = 30_000;
/** The longest `cluster.lease` the configuration accepts (src/config/schema.ts). */
export const MAX_LEASE_MS = 600_000;
