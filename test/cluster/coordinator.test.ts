/**
 * The cluster coordinator (src/cluster/coordinator.ts) on a fake clock: several replicas, each
 * with its own connection to one in-memory lease store (test/cluster/memory-leases.ts), running
 * their rounds and deadline checks as `start()` would. After every simulated second the test
 * checks the one rule that matters: no account is led by two replicas at once; and it keeps, per
 * account, the longest time it was led by nobody while a replica ran (`longestUnled`).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator, planBalance, type AccountWork } from '../../src/cluster/coordinator.js';
import type { Fence, Lease, LeaseRepository } from '../../src/domain/leases.js';
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
  /** Times an account was led by two replicas at once (must stay empty). */
  violations: string[] = [];
  /** The longest time (ms) an account was led by nobody while some replica ran. */
  longestUnled = 0;
  private readonly unledSince = new Map<string, number>();
  /** Work stops that resolve only when the test says so (a cycle in flight). */
  slowStops = false;
  private pendingStops: (() => void)[] = [];

  constructor(readonly accounts: readonly string[] = ACCOUNTS) {}

  add(id: string, link: LeaseRepository & { cut: boolean; hang: boolean } = this.store.link()): Sim {
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
    const coordinator = new Coordinator({ repo: link, replica: { id, host: `host-${id}`, pid: 1 }, accounts: () => this.accounts, work, clock: this.clock, leaseMs: LEASE });
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
      this.checkLeaders();
    }
  }

  /** The rule: an account is led (holds() and working) by at most one replica at any time. And how long each was led by none. */
  private checkLeaders(): void {
    const now = this.clock.now();
    for (const account of this.accounts) {
      const leaders = this.replicas.filter((r) => r.alive && r.coordinator.holds(account)).map((r) => r.id);
      if (leaders.length > 1) this.violations.push(`${new Date(now).toISOString()} ${account}: ${leaders.join(', ')}`);
      if (leaders.length > 0 || !this.replicas.some((r) => r.alive)) this.unledSince.delete(account);
      else if (!this.unledSince.has(account)) this.unledSince.set(account, now - 1_000); // led by nobody since the last step at least
      else this.longestUnled = Math.max(this.longestUnled, now - (this.unledSince.get(account) as number));
    }
  }

  /** Stops replica `id` as SIGTERM does (its leases released) and starts it again under the same id (a configured `replica_id`). */
  async restart(id: string, awayMs: number): Promise<Sim> {
    const old = this.replicas.find((r) => r.alive && r.id === id) as Sim;
    await old.coordinator.stop();
    old.alive = false;
    await this.run(awayMs);
    return this.add(id);
  }

  /** Each account's fencing token now: a token that went up is a lease that moved. */
  tokens(): Record<string, number> {
    return Object.fromEntries(this.store.leases().map((l) => [l.account, l.token]));
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

  it('the balance plan: free leases to the fewest, the fair share is a ceiling, only a difference of two moves one lease', () => {
    const plan = (holders: Record<string, string | null>, live: string[]) => {
      const p = planBalance(Object.keys(holders).sort(), live, new Map(Object.entries(holders)));
      return { ceiling: p.ceiling, takers: Object.fromEntries(p.takers), shedder: p.shedder };
    };
    // Nothing held: the fewest first, then the lowest id.
    expect(plan({ w: null, x: null, y: null, z: null }, ['a', 'b', 'c'])).toEqual({ ceiling: 2, takers: { w: 'a', x: 'b', y: 'c', z: 'a' }, shedder: undefined });
    // Balanced though not as the ids would have it: nothing moves (the lowest id does not get its account back).
    expect(plan({ x: 'b', y: 'c' }, ['a', 'b', 'c'])).toEqual({ ceiling: 1, takers: {}, shedder: undefined });
    expect(plan({ w: 'b', x: 'b', y: 'c', z: 'a' }, ['a', 'b', 'c'])).toEqual({ ceiling: 2, takers: {}, shedder: undefined });
    // Two more than another: the one holding the most gives one up (of two tied, the highest id).
    expect(plan({ w: 'b', x: 'b', y: 'c', z: 'c' }, ['a', 'b', 'c'])).toEqual({ ceiling: 2, takers: {}, shedder: 'c' });
    // The free leases counted as taken first: a free lease that evens it out moves nothing else.
    expect(plan({ w: 'b', x: 'b', y: 'c', z: null }, ['a', 'b', 'c'])).toEqual({ ceiling: 2, takers: { z: 'a' }, shedder: undefined });
    // A holder not counted live (its heartbeat is old) keeps its running lease until it expires: not free, not counted.
    expect(plan({ x: 'ghost', y: null }, ['a', 'b'])).toEqual({ ceiling: 1, takers: { y: 'a' }, shedder: undefined });
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
    [3, [1, 1, 2]],
  ])('four accounts over %i replicas started together: %j, each account led by exactly one', async (n, expected) => {
    cluster = new Cluster();
    for (let i = 0; i < n; i++) cluster.add(String.fromCharCode(97 + i));
    await cluster.run(2 * LEASE);
    const shares = cluster.shares();
    expect(Object.values(shares).map((s) => s.length).sort()).toEqual(expected);
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

  it('a restarted replica (the lowest id) gets nothing back while the others are balanced: no lease moves on its return', async () => {
    cluster = new Cluster(['acme', 'globex']);
    cluster.add('a');
    await cluster.run(1_000);
    cluster.add('b');
    await cluster.run(LEASE);
    cluster.add('c');
    await cluster.run(LEASE);
    const [aLeads] = cluster.shares().a as string[];
    const [bLeads] = cluster.shares().b as string[];
    expect(cluster.shares().c).toEqual([]); // 1, 1 and 0: balanced, c waits
    const before = cluster.tokens();

    // a restarts (SIGTERM, then started again under its replica_id): c takes the account a released.
    await cluster.restart('a', 5_000);
    const away = cluster.tokens();
    expect(away).toEqual({ ...before, [aLeads as string]: (before[aLeads as string] as number) + 1 });
    await cluster.run(3 * LEASE);
    expect(cluster.shares()).toEqual({ b: [bLeads], c: [aLeads], a: [] }); // a is back and balanced: it waits
    expect(cluster.tokens()).toEqual(away); // no lease moved on its return
    expect(cluster.longestUnled).toBeLessThanOrEqual(LEASE);
  });

  it('three replicas started one after another and restarted in turn end balanced, with nothing led by none for a lease and no lease moving once balanced', async () => {
    const accounts = ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7'];
    cluster = new Cluster(accounts);
    const sorted = () => Object.values((cluster as Cluster).shares()).map((x) => x.length).sort();
    for (const id of ['c', 'a', 'b']) {
      cluster.add(id);
      await cluster.run(LEASE / 2);
    }
    await cluster.run(2 * LEASE);
    expect(sorted()).toEqual([2, 2, 3]);
    for (const id of ['a', 'b', 'c', 'a']) {
      await cluster.restart(id, LEASE / 2);
      await cluster.run(2 * LEASE);
      expect(sorted(), `after the restart of ${id}`).toEqual([2, 2, 3]);
      expect(Object.values(cluster.shares()).flat().sort()).toEqual(accounts);
    }
    // Balanced, it stays so: no lease moves (no two replicas handing an account back and forth).
    const settled = cluster.tokens();
    await cluster.run(5 * LEASE);
    expect(cluster.tokens()).toEqual(settled);
    expect(cluster.longestUnled).toBeLessThanOrEqual(LEASE);
  });

  it('a replica that comes back to a real imbalance gets its share one account at a time', async () => {
    cluster = new Cluster();
    cluster.add('a');
    cluster.add('b');
    cluster.add('c');
    await cluster.run(2 * LEASE);
    const holderOfTwo = Object.entries(cluster.shares()).find(([, s]) => s.length === 2)?.[0] as string;
    const others = ['a', 'b', 'c'].filter((id) => id !== holderOfTwo);
    // One of the replicas with one account is restarted: away, the others hold 2 and 2; back, it gets one of them.
    const restarted = others[0] as string;
    await cluster.restart(restarted, LEASE / 2);
    expect(cluster.shares()[restarted]).toEqual([]);
    await cluster.run(2 * LEASE);
    expect(Object.values(cluster.shares()).map((x) => x.length).sort()).toEqual([1, 1, 2]);
    expect(cluster.shares()[restarted]).toHaveLength(1);
    expect(cluster.longestUnled).toBeLessThanOrEqual(LEASE);
  });

  it('an acquire the replica gave up waiting for that committed all the same is released and taken again at the next round, not left unworked until it expires', async () => {
    cluster = new Cluster();
    const link = cluster.store.link();
    const store = cluster.store;
    let abandoned: number | undefined;
    // The first acquire of acme commits on the server, but its answer never comes back (a connection lost after the commit).
    link.acquire = (account, holder, now, ttlMs) => {
      if (account !== 'acme' || abandoned !== undefined) return store.acquire(account, holder, now, ttlMs);
      abandoned = store.acquire(account, holder, now, ttlMs)?.expiresAt;
      return new Promise(() => undefined);
    };
    const a = cluster.add('a', link);
    while (!a.coordinator.holds('acme') && cluster.clock.now() < (abandoned ?? Infinity) + LEASE) await cluster.run(1_000);
    expect(abandoned).toBeDefined();
    expect(a.coordinator.holds('acme'), 'acme is led again').toBe(true);
    expect(cluster.clock.now(), 'acme is led again before the abandoned lease expired').toBeLessThan(abandoned as number);
    expect(a.working.get('acme')).toEqual({ account: 'acme', holder: 'a', token: 2 }); // the abandoned tenure (1) was released, a new one taken
    expect(a.coordinator.leading()).toEqual(ACCOUNTS);
    expect(a.events.filter((e) => e.includes('acme'))).toEqual(['start acme #2']);
  });

  it('a release the replica gave up waiting for that did not go through is released again at the next round: the new replica gets its share before the lease expires', async () => {
    cluster = new Cluster();
    const link = cluster.store.link();
    const store = cluster.store;
    let hung: Lease | undefined;
    // The first release never answers and changes nothing (its connection lost before it reached the server).
    link.release = (fence) => {
      if (hung !== undefined) return store.release(fence);
      hung = store.leases().find((l) => l.account === fence.account);
      return new Promise(() => undefined);
    };
    const a = cluster.add('a', link);
    await cluster.run(1_000);
    const b = cluster.add('b');
    while (b.coordinator.leading().length < 2 && cluster.clock.now() < (hung?.expiresAt ?? Infinity) + LEASE) await cluster.run(1_000);
    expect(hung, 'a release was given up on').toBeDefined();
    const left = hung as Lease;
    expect(b.coordinator.leading(), 'b has its share').toHaveLength(2);
    expect(b.coordinator.leading()).toContain(left.account);
    expect(cluster.clock.now(), 'taken over before the lease that release left behind expired').toBeLessThan(left.expiresAt);
    expect(store.leases().find((l) => l.account === left.account)?.token).toBe(left.token + 1);
    expect(a.coordinator.leading()).toHaveLength(2);
  });

  it('a replica killed and started again under its replica_id leaves the leases of its earlier life (which may only be frozen) until they expire', async () => {
    cluster = new Cluster();
    const a = cluster.add('a');
    await cluster.run(1_000);
    const expiry = Math.min(...cluster.store.leases().map((l) => l.expiresAt));
    a.alive = false; // kill -9, or frozen: its leases run on
    const again = cluster.add('a');
    await cluster.run(LEASE / 3 + 1_000);
    expect(again.coordinator.leading()).toEqual([]);
    expect(Object.values(cluster.tokens())).toEqual([1, 1, 1, 1]);
    while (cluster.clock.now() < expiry + LEASE / 3 + 1_000) await cluster.run(1_000);
    expect(again.coordinator.leading()).toEqual(ACCOUNTS);
    expect(Object.values(cluster.tokens())).toEqual([2, 2, 2, 2]);
  });

  it('two processes given one replica_id by mistake do not release each other’s leases round after round', async () => {
    cluster = new Cluster();
    const first = cluster.add('a');
    await cluster.run(LEASE);
    const second = cluster.add('a');
    await cluster.run(LEASE);
    const settled = cluster.tokens();
    await cluster.run(5 * LEASE);
    expect(cluster.tokens()).toEqual(settled);
    expect([...first.coordinator.leading(), ...second.coordinator.leading()].sort()).toEqual(ACCOUNTS);
  });
});
