/**
 * The contract of LeaseRepository (src/domain/leases.ts) and of the fenced writes, as suites any
 * implementation runs. `leasesContract` holds two handles on one lease store (two replicas) to the
 * lease rules: in memory, SQLite (two connections to one file) and PostgreSQL (two pools on one
 * database). `fencingContract` holds a store's cycle write, group queue and outbox to "a replica
 * whose lease changed hands writes nothing": SQLite and PostgreSQL.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CycleCommitter, GroupQueue } from '../../src/alerts/repositories.js';
import type { Awaitable } from '../../src/awaitable.js';
import { fenceOf, LeaseLostError, otherReplicaArchives, type Fence, type Lease, type LeaseRepository } from '../../src/domain/leases.js';
import type { OutboxRepository } from '../../src/domain/outbox.js';
import type { AlertItem, NotificationMessage } from '../../src/domain/notifications.js';
import type { CycleRecord } from '../../src/domain/store.js';
import { item } from '../notify/fixtures.js';
import { okCycle, snap } from '../store/model.js';

export interface LeasesFixture {
  /** Two handles on one lease store: two replicas' connections. */
  handles: [LeaseRepository, LeaseRepository];
  close(): void | Promise<void>;
}

const T = Date.parse('2026-05-01T09:00:00Z');
const TTL = 30_000;
const A = { id: 'replica-a', host: 'host-a', pid: 101 };
const B = { id: 'replica-b', host: 'host-b', pid: 202 };

/** The fence of a lease that acquire or renew returned (failing the test when it returned null). */
function held(lease: Lease | null): Fence {
  expect(lease).not.toBeNull();
  return fenceOf(lease as Lease & { holder: string });
}

export function leasesContract(name: string, make: () => LeasesFixture | Promise<LeasesFixture>): void {
  describe(`LeaseRepository contract: ${name}`, () => {
    let f: LeasesFixture;
    let a: LeaseRepository;
    let b: LeaseRepository;
    beforeEach(async () => {
      f = await make();
      [a, b] = f.handles;
    });
    afterEach(async () => {
      await f.close();
    });

    it('replicas announce themselves and beat; the first beat stays their start; one that leaves is gone', async () => {
      await a.heartbeat(A, T);
      await b.heartbeat(B, T + 1_000);
      await a.heartbeat(A, T + 5_000);
      expect(await b.replicas()).toEqual([
        { ...A, startedAt: T, beatAt: T + 5_000, sharedWith: null, archive: null },
        { ...B, startedAt: T + 1_000, beatAt: T + 1_000, sharedWith: null, archive: null },
      ]);
      await a.leave(A.id);
      expect((await b.replicas()).map((r) => r.id)).toEqual([B.id]);
    });

    it('a heartbeat says who beat last under its replica id (host, pid, instance token): nobody at first, then itself, another process given the same id, nobody once it left', async () => {
      const first = { ...A, instance: 'aaaa1111' };
      const second = { ...A, host: 'host-c', pid: 303, instance: 'cccc3333' }; // given the same replica id by mistake
      expect(await a.heartbeat(first, T)).toBeNull();
      expect(await a.heartbeat(first, T + 10_000)).toEqual({ host: A.host, pid: A.pid, instance: 'aaaa1111' });
      expect(await b.heartbeat(second, T + 12_000)).toEqual({ host: A.host, pid: A.pid, instance: 'aaaa1111' });
      expect(await a.heartbeat(first, T + 20_000)).toEqual({ host: 'host-c', pid: 303, instance: 'cccc3333' });
      expect(await b.heartbeat(B, T + 21_000)).toBeNull(); // another id: its own row
      expect(await b.replicas()).toEqual([
        { ...A, startedAt: T, beatAt: T + 20_000, sharedWith: null, archive: null },
        { ...B, startedAt: T + 21_000, beatAt: T + 21_000, sharedWith: null, archive: null },
      ]);
      await b.leave(A.id);
      expect(await a.heartbeat(first, T + 30_000)).toBeNull();
      expect(await a.heartbeat(A, T + 40_000)).toEqual({ host: A.host, pid: A.pid, instance: 'aaaa1111' }); // no token: as a process of before tokens
      expect(await a.heartbeat(first, T + 50_000)).toEqual({ host: A.host, pid: A.pid, instance: null });
    });

    it('a heartbeat records the other process its replica found under its id (what `boxwatch status` shows), until a heartbeat without it', async () => {
      await a.heartbeat({ ...A, instance: 'aaaa1111' }, T);
      await b.heartbeat({ ...A, host: 'host-c', pid: 303, instance: 'cccc3333', sharedWith: { host: A.host, pid: A.pid } }, T + 1_000);
      expect(await a.replicas()).toEqual([{ id: A.id, host: 'host-c', pid: 303, startedAt: T, beatAt: T + 1_000, sharedWith: { host: A.host, pid: A.pid }, archive: null }]);
      await a.heartbeat({ ...A, instance: 'aaaa1111', sharedWith: { host: 'host-c', pid: 303 } }, T + 2_000);
      expect((await b.replicas())[0]?.sharedWith).toEqual({ host: 'host-c', pid: 303 });
      await a.heartbeat({ ...A, instance: 'aaaa1111', sharedWith: null }, T + 40_000);
      expect((await b.replicas())[0]?.sharedWith).toBeNull();
    });

    it('a heartbeat records the archive directory its replica announces (src/archive/identity.ts), the latest one; the live others’ are what the archiver compares', async () => {
      await a.heartbeat(A, T); // no archive yet (its first archive pass has not run)
      await b.heartbeat({ ...B, archive: 'vm2-0badcafe' }, T + 1_000);
      expect((await a.replicas()).map((r) => [r.id, r.archive])).toEqual([
        [A.id, null],
        [B.id, 'vm2-0badcafe'],
      ]);
      await a.heartbeat({ ...A, archive: 'vm1-77b2e410' }, T + 2_000);
      expect(otherReplicaArchives(await a.replicas(), A.id, T + 3_000, TTL)).toEqual([{ replica: B.id, archive: 'vm2-0badcafe' }]);
      expect(otherReplicaArchives(await b.replicas(), B.id, T + 3_000, TTL)).toEqual([{ replica: A.id, archive: 'vm1-77b2e410' }]);
      // B restarted with a new archive.dir: its heartbeat replaces the id; once it stops beating (or leaves) it is nobody's.
      await b.heartbeat({ ...B, archive: 'vm2-5eed1e55' }, T + 4_000);
      expect(otherReplicaArchives(await a.replicas(), A.id, T + 5_000, TTL)).toEqual([{ replica: B.id, archive: 'vm2-5eed1e55' }]);
      expect(otherReplicaArchives(await a.replicas(), A.id, T + 4_000 + TTL, TTL)).toEqual([]);
      await b.leave(B.id);
      expect(otherReplicaArchives(await a.replicas(), A.id, T + 5_000, TTL)).toEqual([]);
    });

    it('a free lease is taken with token 1 until now + ttl; while it runs nobody else gets it', async () => {
      expect(await a.acquire('acme', A.id, T, TTL)).toEqual({ account: 'acme', holder: A.id, token: 1, expiresAt: T + TTL });
      expect(await b.acquire('acme', B.id, T + 1_000, TTL)).toBeNull();
      expect(await b.acquire('acme', B.id, T + TTL - 1, TTL)).toBeNull();
      expect(await b.leases()).toEqual([{ account: 'acme', holder: A.id, token: 1, expiresAt: T + TTL }]);
    });

    it('an expired lease is taken over with a higher token; the old holder can neither renew nor release it', async () => {
      const old = held(await a.acquire('acme', A.id, T, TTL));
      const next = held(await b.acquire('acme', B.id, T + TTL, TTL));
      expect(next.token).toBeGreaterThan(old.token);
      expect(await a.renew(old, T + TTL + 1, TTL)).toBeNull();
      expect(await a.release(old)).toBe(false);
      expect(await a.leases()).toEqual([{ account: 'acme', holder: B.id, token: next.token, expiresAt: T + 2 * TTL }]);
    });

    it('the holder renews its lease (same token, later expiry), which keeps others out', async () => {
      const mine = held(await a.acquire('acme', A.id, T, TTL));
      expect(await a.renew(mine, T + 10_000, TTL)).toEqual({ account: 'acme', holder: A.id, token: mine.token, expiresAt: T + 10_000 + TTL });
      expect(await b.acquire('acme', B.id, T + TTL, TTL)).toBeNull();
      // Renewed late, after expiry, but before anybody took it: still the holder's (the token says so).
      expect(await a.renew(mine, T + 10_000 + TTL + 5_000, TTL)).not.toBeNull();
    });

    it('a released lease is free at once; the next tenure has a higher token, even for the same replica', async () => {
      const first = held(await a.acquire('acme', A.id, T, TTL));
      expect(await a.release(first)).toBe(true);
      expect(await b.leases()).toEqual([{ account: 'acme', holder: null, token: first.token, expiresAt: T + TTL }]); // its expiry stays: when it was last worked (leaseInUse)
      const second = held(await b.acquire('acme', B.id, T + 1, TTL));
      expect(second.token).toBe(first.token + 1);
      expect(await b.release(second)).toBe(true);
      const third = held(await a.acquire('acme', A.id, T + 2, TTL));
      expect(third.token).toBe(second.token + 1);
    });

    it('a replica that leaves releases its leases', async () => {
      await a.heartbeat(A, T);
      held(await a.acquire('acme', A.id, T, TTL));
      held(await a.acquire('globex', A.id, T, TTL));
      held(await b.acquire('initech', B.id, T, TTL));
      await a.leave(A.id);
      expect((await b.leases()).map((l) => [l.account, l.holder])).toEqual([
        ['acme', null],
        ['globex', null],
        ['initech', B.id],
      ]);
      expect(await b.acquire('acme', B.id, T + 1, TTL)).not.toBeNull();
    });

    it('two replicas racing for a free lease: exactly one gets it', async () => {
      for (let round = 0; round < 5; round++) {
        const account = `race-${round}`;
        const got = await Promise.all([a.acquire(account, A.id, T, TTL), b.acquire(account, B.id, T, TTL)]);
        expect(got.filter((l) => l !== null)).toHaveLength(1);
        const [lease] = (await a.leases()).filter((l) => l.account === account);
        expect(lease?.holder).toBe(got.find((l) => l !== null)?.holder);
      }
    });
  });
}

export interface FencingFixture {
  leases: LeaseRepository;
  committer: CycleCommitter<AlertItem> & { lastCycle(): Awaitable<CycleRecord | undefined> };
  queue: GroupQueue<AlertItem, NotificationMessage>;
  outbox: OutboxRepository;
  close(): void | Promise<void>;
}

const queueOne = (serial: string, at: number) => () => ({ alerts: { states: new Map(), dropped: [], transitions: [], queued: [{ notifier: 'slack', createdAt: at, item: item({ serial }) }] }, result: null });

export function fencingContract(name: string, make: () => FencingFixture | Promise<FencingFixture>): void {
  describe(`fenced writes contract: ${name}`, () => {
    let f: FencingFixture;
    beforeEach(async () => {
      f = await make();
    });
    afterEach(async () => {
      await f.close();
    });

    /** Replica A led `account` until its lease expired; B took it over. */
    async function takenOver(account: string): Promise<{ stale: Fence; current: Fence }> {
      const stale = held(await f.leases.acquire(account, A.id, T, TTL));
      const current = held(await f.leases.acquire(account, B.id, T + TTL, TTL));
      return { stale, current };
    }

    /** Queues one item of `fence`'s account through a fenced cycle and moves it to the outbox. */
    async function queuedMessage(fence: Fence, serial: string, at: number): Promise<void> {
      await f.committer.commitCycle(okCycle(at, [snap('BX-1', { lastSeen: at })]), at, queueOne(serial, at), fence);
      const rows = await f.queue.pending(10, fence);
      await f.queue.release([{ notifier: 'slack', ids: rows.map((r) => r.id), message: { kind: 'alert', items: rows.map((r) => r.item), createdAt: at } }], at, fence);
    }

    it("a cycle write with a stale token is refused and writes nothing; the new holder's is stored", async () => {
      const { stale, current } = await takenOver('acme');
      const at = T + TTL + 1_000;
      await expect(async () => f.committer.commitCycle(okCycle(at, [snap('BX-1', { lastSeen: at })]), at, queueOne('BX-1', at), stale)).rejects.toBeInstanceOf(LeaseLostError);
      expect(await f.committer.lastCycle()).toBeUndefined();
      expect(await f.queue.pending(10)).toEqual([]);
      await f.committer.commitCycle(okCycle(at, [snap('BX-1', { lastSeen: at })]), at, queueOne('BX-1', at), current);
      expect((await f.committer.lastCycle())?.startedAt).toBe(at);
      expect((await f.queue.pending(10, current)).map((r) => r.item.serial)).toEqual(['BX-1']);
    });

    it('an outbox claim with a stale token is refused and claims nothing; the new holder claims the row', async () => {
      const { stale, current } = await takenOver('acme');
      await queuedMessage(current, 'BX-7', T + TTL);
      await expect(async () => f.outbox.claim('slack', T + TTL + 1, 10, 60_000, stale)).rejects.toBeInstanceOf(LeaseLostError);
      const rows = await f.outbox.claim('slack', T + TTL + 1, 10, 60_000, current);
      expect(rows.map((r) => r.message.items[0]?.serial)).toEqual(['BX-7']);
    });

    it('a group queue release with a stale token is refused and moves nothing', async () => {
      const { stale, current } = await takenOver('acme');
      const at = T + TTL;
      await f.committer.commitCycle(okCycle(at, [snap('BX-1', { lastSeen: at })]), at, queueOne('BX-2', at), current);
      const rows = await f.queue.pending(10, current);
      const batch = [{ notifier: 'slack', ids: rows.map((r) => r.id), message: { kind: 'alert' as const, items: rows.map((r) => r.item), createdAt: at } }];
      await expect(async () => f.queue.release(batch, at, stale)).rejects.toBeInstanceOf(LeaseLostError);
      expect((await f.queue.pending(10, current)).map((r) => r.item.serial)).toEqual(['BX-2']);
      expect(await f.outbox.claim('slack', at, 10, 60_000)).toEqual([]);
      await f.queue.release(batch, at, current);
      expect(await f.queue.pending(10)).toEqual([]);
    });

    it("a fence reads, releases and claims only its own account's items and messages", async () => {
      const acme = held(await f.leases.acquire('acme', A.id, T, TTL));
      const globex = held(await f.leases.acquire('globex', B.id, T, TTL));
      await f.committer.commitCycle(okCycle(T, [snap('BX-1', { lastSeen: T })]), T, queueOne('ACME-1', T), acme);
      await f.committer.commitCycle(okCycle(T + 1_000, [snap('BX-1', { lastSeen: T + 1_000 })]), T + 1_000, queueOne('GLOBEX-1', T + 1_000), globex);
      expect((await f.queue.pending(10, acme)).map((r) => r.item.serial)).toEqual(['ACME-1']);
      expect((await f.queue.pending(10, globex)).map((r) => r.item.serial)).toEqual(['GLOBEX-1']);
      const rows = await f.queue.pending(10, globex);
      await f.queue.release([{ notifier: 'slack', ids: rows.map((r) => r.id), message: { kind: 'alert', items: rows.map((r) => r.item), createdAt: T } }], T + 2_000, globex);
      expect(await f.outbox.claim('slack', T + 2_000, 10, 60_000, acme)).toEqual([]);
      expect((await f.outbox.claim('slack', T + 2_000, 10, 60_000, globex)).map((r) => r.message.items[0]?.serial)).toEqual(['GLOBEX-1']);
      // Without a fence (one daemon), the queue holds every account's items.
      expect((await f.queue.pending(10)).map((r) => r.item.serial)).toEqual(['ACME-1']);
    });

    it("taking a lease over voids the old holder's claims: its rows are due again at once for the new holder", async () => {
      const old = held(await f.leases.acquire('acme', A.id, T, TTL));
      await queuedMessage(old, 'BX-9', T);
      expect(await f.outbox.claim('slack', T, 10, 3_600_000, old)).toHaveLength(1); // claimed for an hour, then A dies
      const next = held(await f.leases.acquire('acme', B.id, T + TTL, TTL));
      expect((await f.outbox.claim('slack', T + TTL, 10, 60_000, next)).map((r) => r.message.items[0]?.serial)).toEqual(['BX-9']);
    });

    it("a message released without a fence belongs to its items' account", async () => {
      const acme = held(await f.leases.acquire('acme', A.id, T, TTL));
      await f.committer.commitCycle(okCycle(T, [snap('BX-1', { lastSeen: T })]), T, queueOne('ACME-2', T), acme);
      const rows = await f.queue.pending(10);
      await f.queue.release([{ notifier: 'slack', ids: rows.map((r) => r.id), message: { kind: 'alert', items: rows.map((r) => r.item), createdAt: T } }], T);
      expect((await f.outbox.claim('slack', T, 10, 60_000, acme)).map((r) => r.message.items[0]?.serial)).toEqual(['ACME-2']);
    });
  });
}
