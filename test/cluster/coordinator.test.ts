/**
 * The cluster coordinator (src/cluster/coordinator.ts) on a fake clock: several replicas, each
 * with its own connection to one in-memory lease store (test/cluster/memory-leases.ts), running
 * their rounds and deadline checks as `start()` would. After every simulated second the test
 * checks the one rule that matters: no account is led by two replicas at once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator, quotas, type AccountWork } from '../../src/cluster/coordinator.js';
import type { Fence, LeaseRepository } from '../../src/cluster/leases.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { MemoryLeases } from './memory-leases.js';

const LEASE = 30_000;
const ACCOUNTS = ['acme', 'globex', 'initech', 'umbrella'];

interface Sim {
  id: string;
  coordinator: Coordinator;
  link: LeaseRepository & { cut: boolean; hang: boolean };
  /** Accounts whose work runs (started, not stopped), with the fence they were started with. */
  working: Map<string, Fence>;
  /** Every start and stop, in order. */
  events: string[];
  /** False once killed (kill -9, or frozen): its timers no longer run. */
  alive: boolean;
  lastTick: number;
}

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

class Cluster {
  readonly clock = new FakeClock('2026-05-01T09:00:00Z');
  readonly store = new MemoryLeases();
  readonly replicas: Sim[] = [];
  /** Per account: when it was last led by a replica (for takeover times). */
  violations: string[] = [];
  /** Work stops that resolve only when the test says so (a cycle in flight). */
  slowStops = false;
  private pendingStops: (() => void)[] = [];

  add(id: string): Sim {
    const link = this.store.link();
    const working = new Map<string, Fence>();
    const events: string[] = [];
    const work: AccountWork = {
      start: (account, fence) => {
        working.set(account, fence);
        events.push(`start ${account} #${fence.token}`);
      },
      stop: (account, why) => {
        working.delete(account);
        events.push(`stop ${account} (${why})`);
        if (!this.slowStops) return Promise.resolve();
        return new Promise<void>((resolve) => this.pendingStops.push(resolve));
      },
    };
    const coordinator = new Coordinator({ repo: link, replica: { id, host: `host-${id}`, pid: 1 }, accounts: () => ACCOUNTS, work, clock: this.clock, leaseMs: LEASE });
    const sim: Sim = { id, coordinator, link, working, events, alive: true, lastTick: -Infinity };
    this.replicas.push(sim);
    return sim;
  }

  finishStops(): void {
    for (const resolve of this.pendingStops.splice(0)) resolve();
  }

  /** Runs `ms` of simulated time in 1 s steps: every live replica's deadline check each second, its round every lease/3. */
  async run(ms: number): Promise<void> {
    for (let t = 0; t < ms; t += 1_000) {
      this.clock.advance(1_000);
      await flush();
      for (const r of this.replicas) {
        if (!r.alive) continue;
        r.coordinator.checkDeadlines();
        if (this.clock.now() - r.lastTick >= r.coordinator.intervalMs) {
          r.lastTick = this.clock.now();
          void r.coordinator.tick();
        }
      }
      for (let i = 0; i < 5; i++) await flush();
      this.checkOneLeader();
    }
  }

  /** The rule: an account is led (holds() and working) by at most one replica at any time. */
  private checkOneLeader(): void {
    for (const account of ACCOUNTS) {
      const leaders = this.replicas.filter((r) => r.alive && r.coordinator.holds(account)).map((r) => r.id);
      if (leaders.length > 1) this.violations.push(`${new Date(this.clock.now()).toISOString()} ${account}: ${leaders.join(', ')}`);
    }
  }

  leaderOf(account: string): string | undefined {
    return this.replicas.find((r) => r.alive && r.coordinator.holds(account))?.id;
  }

  shares(): Record<string, string[]> {
    return Object.fromEntries(this.replicas.filter((r) => r.alive).map((r) => [r.id, r.coordinator.leading()]));
  }
}

describe('the cluster coordinator', () => {
  let cluster: Cluster | undefined;
  afterEach(() => {
    expect(cluster?.violations ?? []).toEqual([]);
    cluster = undefined;
  });

  it('quotas: floor(accounts / replicas), one more for the first ids', () => {
    expect([...quotas(4, ['a']).values()]).toEqual([4]);
    expect([...quotas(4, ['a', 'b']).values()]).toEqual([2, 2]);
    expect([...quotas(4, ['a', 'b', 'c']).values()]).toEqual([2, 1, 1]);
    expect([...quotas(2, ['a', 'b', 'c']).values()]).toEqual([1, 1, 0]);
  });

  it('one replica leads all four accounts, working each with the fence of its lease', async () => {
    cluster = new Cluster();
    const a = cluster.add('a');
    await cluster.run(1_000);
    expect(a.coordinator.leading()).toEqual(ACCOUNTS);
    expect([...a.working.keys()].sort()).toEqual(ACCOUNTS);
    expect(a.working.get('acme')).toEqual({ account: 'acme', holder: 'a', token: 1 });
    await cluster.run(5 * LEASE); // renewals keep them
    expect(a.coordinator.leading()).toEqual(ACCOUNTS);
    expect(a.events.filter((e) => e.startsWith('stop'))).toEqual([]);
  });

  it.each([
    [2, [2, 2]],
    [3, [2, 1, 1]],
  ])('four accounts over %i replicas started together: %j, each account led by exactly one', async (n, expected) => {
    cluster = new Cluster();
    for (let i = 0; i < n; i++) cluster.add(String.fromCharCode(97 + i));
    await cluster.run(2 * LEASE);
    const shares = cluster.shares();
    expect(Object.values(shares).map((s) => s.length)).toEqual(expected);
    expect(Object.values(shares).flat().sort()).toEqual(ACCOUNTS);
  });

  it('a new replica takes its share: the old one releases its extras only after their work stopped', async () => {
    cluster = new Cluster();
    const a = cluster.add('a');
    await cluster.run(1_000);
    expect(a.coordinator.leading()).toEqual(ACCOUNTS);
    cluster.slowStops = true; // a cycle is in flight for each account
    const b = cluster.add('b');
    await cluster.run(LEASE / 3);
    // a stopped two accounts' work but has not released them while their work is still finishing.
    expect(a.coordinator.leading()).toHaveLength(2);
    const stopping = ACCOUNTS.filter((x) => !a.coordinator.leading().includes(x));
    expect(b.coordinator.leading()).toEqual([]);
    expect(cluster.store.leases().filter((l) => stopping.includes(l.account)).map((l) => l.holder)).toEqual(['a', 'a']);
    cluster.slowStops = false;
    cluster.finishStops();
    await cluster.run(LEASE / 3 + 1_000);
    expect(b.coordinator.leading()).toEqual(stopping);
    expect(a.coordinator.leading()).toHaveLength(2);
    expect(b.working.get(stopping[0] as string)?.token).toBe(2); // a new tenure
  });

  /** Replicas a, then b, in `c`, balanced (two accounts each); a's accounts and when its leases expire. */
  const twoBalancedReplicas = async (c: Cluster) => {
    const a = c.add('a');
    await c.run(1_000);
    const b = c.add('b');
    await c.run(2 * LEASE);
    const aLeads = a.coordinator.leading();
    expect(aLeads).toHaveLength(2);
    const expiry = Math.max(...c.store.leases().filter((l) => l.holder === 'a').map((l) => l.expiresAt));
    return { a, b, aLeads, expiry };
  };

  it("a dead replica's leases are taken over after they expire, not before; takeover within the lease time plus a round", async () => {
    cluster = new Cluster();
    const { a, b, aLeads, expiry } = await twoBalancedReplicas(cluster);
    a.alive = false; // kill -9: no release, no more rounds
    const killedAt = cluster.clock.now();
    let takenAt: number | undefined;
    while (takenAt === undefined && cluster.clock.now() < killedAt + 3 * LEASE) {
      await cluster.run(1_000);
      if (aLeads.every((x) => b.coordinator.holds(x))) takenAt = cluster.clock.now();
      else expect(cluster.clock.now()).toBeLessThanOrEqual(expiry + LEASE / 3 + 1_000);
    }
    expect(takenAt).toBeDefined();
    expect(takenAt as number).toBeGreaterThanOrEqual(expiry); // not before the leases expired
    expect((takenAt as number) - killedAt).toBeLessThanOrEqual(LEASE + LEASE / 3 + 1_000);
    expect(b.coordinator.leading()).toEqual(ACCOUNTS);
  });

  it.each(['cut', 'hang'] as const)('a partitioned replica (database calls %s) stops its accounts before its leases expire; the other takes them after', async (how) => {
    cluster = new Cluster();
    const { a, b, aLeads, expiry } = await twoBalancedReplicas(cluster);
    a.link[how] = true;
    let stoppedAt: number | undefined;
    let takenAt: number | undefined;
    while (takenAt === undefined && cluster.clock.now() < expiry + LEASE) {
      await cluster.run(1_000);
      if (stoppedAt === undefined && a.coordinator.leading().length === 0) stoppedAt = cluster.clock.now();
      if (aLeads.every((x) => b.coordinator.holds(x))) takenAt = cluster.clock.now();
    }
    expect(stoppedAt).toBeDefined();
    expect(stoppedAt as number).toBeLessThan(expiry); // stepped down before the lease ran out
    expect([...a.working.keys()]).toEqual([]);
    expect(a.events.filter((e) => e.includes('(deadline)'))).toHaveLength(2);
    expect(takenAt as number).toBeGreaterThanOrEqual(expiry);
    // The partition heals: a finds b's leases and gets its share back by balance, with new tokens.
    a.link[how] = false;
    await cluster.run(2 * LEASE);
    expect(Object.values(cluster.shares()).map((s) => s.length)).toEqual([2, 2]);
  });

  it("a replica whose lease was taken over (its renewal refused) stops that account's work at once", async () => {
    cluster = new Cluster();
    const a = cluster.add('a');
    await cluster.run(1_000);
    // Frozen for a minute: its leases expire and another replica takes them.
    a.alive = false;
    const b = cluster.add('b');
    await cluster.run(LEASE + 15_000);
    expect(b.coordinator.leading()).toEqual(ACCOUNTS);
    // It wakes up: the first thing it does is check its deadlines; nothing is led by two.
    a.alive = true;
    await cluster.run(LEASE);
    expect(cluster.violations).toEqual([]);
    expect(a.events.filter((e) => e.startsWith('stop'))).toHaveLength(4);
    expect(Object.values(cluster.shares()).map((s) => s.length).sort()).toEqual([2, 2]);
  });

  it('stop() stops the work, releases the leases and leaves: another replica takes them at once', async () => {
    cluster = new Cluster();
    const a = cluster.add('a');
    const b = cluster.add('b');
    await cluster.run(2 * LEASE);
    await a.coordinator.stop();
    a.alive = false;
    expect([...a.working.keys()]).toEqual([]);
    expect(cluster.store.replicas().map((r) => r.id)).toEqual(['b']);
    await cluster.run(LEASE / 3 + 1_000);
    expect(b.coordinator.leading()).toEqual(ACCOUNTS);
  });

  it("a refused write (lost) stops that account's work at once, before any renewal", async () => {
    cluster = new Cluster();
    const a = cluster.add('a');
    await cluster.run(1_000);
    const fence = a.working.get('acme') as Fence;
    a.coordinator.lost({ ...fence, token: fence.token + 1 }); // not its tenure: ignored
    expect(a.coordinator.holds('acme')).toBe(true);
    a.coordinator.lost(fence);
    expect(a.coordinator.holds('acme')).toBe(false);
    expect(a.events).toContain('stop acme (lost)');
    expect(a.coordinator.fences().map((f) => f.account)).toEqual(['globex', 'initech', 'umbrella']);
  });
});
