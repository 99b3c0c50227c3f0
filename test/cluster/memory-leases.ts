/**
 * LeaseRepository (src/domain/leases.ts) in memory, for the coordinator's unit tests; held to the
 * same contract as SQLite and PostgreSQL by test/contract/leases.contract.test.ts. It has no
 * outbox, so there are no claims to void when a lease changes hands. `link()` gives one replica
 * its own connection, which a test can cut (every call fails, as from a partitioned replica) or
 * make hang (no answer ever, as over a connection whose packets are dropped).
 */
import type { Fence, Lease, LeaseRepository, PreviousBeat, Replica, ReplicaInfo } from '../../src/domain/leases.js';

export class MemoryLeases implements LeaseRepository {
  private readonly replicaRows = new Map<string, Replica>();
  private readonly leaseRows = new Map<string, Lease>();
  /** The instance token of each replica row (not part of `replicas()`, as in the databases). */
  private readonly instances = new Map<string, string | null>();
  /** Every call throws while set (the database is unreachable from the caller). */
  failing = false;

  /** One replica's connection to this store: `cut` makes its calls fail, `hang` never answer. */
  link(): LeaseRepository & { cut: boolean; hang: boolean } {
    const link = { cut: false, hang: false } as LeaseRepository & { cut: boolean; hang: boolean };
    for (const name of ['heartbeat', 'leave', 'replicas', 'acquire', 'renew', 'release', 'leases'] as const) {
      (link as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
        if (link.hang) return new Promise(() => undefined);
        if (link.cut) return Promise.reject(new Error('connect ECONNREFUSED (the database is unreachable)'));
        return (this[name] as (...a: unknown[]) => unknown)(...args);
      };
    }
    return link;
  }

  heartbeat(replica: ReplicaInfo, now: number): PreviousBeat | null {
    this.reachable();
    const known = this.replicaRows.get(replica.id);
    const before = known === undefined ? null : { host: known.host, pid: known.pid, instance: this.instances.get(replica.id) ?? null };
    this.replicaRows.set(replica.id, { id: replica.id, host: replica.host, pid: replica.pid, startedAt: known?.startedAt ?? now, beatAt: now, sharedWith: replica.sharedWith ?? null, archive: replica.archive ?? null });
    this.instances.set(replica.id, replica.instance ?? null);
    return before;
  }

  leave(replicaId: string): void {
    this.reachable();
    for (const l of this.leaseRows.values()) if (l.holder === replicaId) Object.assign(l, { holder: null });
    this.replicaRows.delete(replicaId);
    this.instances.delete(replicaId);
  }

  replicas(): Replica[] {
    this.reachable();
    return [...this.replicaRows.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map((r) => ({ ...r, sharedWith: r.sharedWith && { ...r.sharedWith } }));
  }

  acquire(account: string, holder: string, now: number, ttlMs: number): Lease | null {
    this.reachable();
    const l = this.leaseRows.get(account);
    if (l !== undefined && l.holder !== null && l.expiresAt > now) return null;
    const next = { account, holder, token: (l?.token ?? 0) + 1, expiresAt: now + ttlMs };
    this.leaseRows.set(account, next);
    return { ...next };
  }

  renew(fence: Fence, now: number, ttlMs: number): Lease | null {
    this.reachable();
    const l = this.held(fence);
    if (l === undefined) return null;
    l.expiresAt = now + ttlMs;
    return { ...l };
  }

  release(fence: Fence): boolean {
    this.reachable();
    const l = this.held(fence);
    if (l === undefined) return false;
    Object.assign(l, { holder: null });
    return true;
  }

  leases(): Lease[] {
    this.reachable();
    return [...this.leaseRows.values()].sort((a, b) => (a.account < b.account ? -1 : a.account > b.account ? 1 : 0)).map((l) => ({ ...l }));
  }

  private held(fence: Fence): Lease | undefined {
    const l = this.leaseRows.get(fence.account);
    return l !== undefined && l.holder === fence.holder && l.token === fence.token ? l : undefined;
  }

  private reachable(): void {
    if (this.failing) throw new Error('connect ECONNREFUSED (the database is unreachable)');
  }
}
