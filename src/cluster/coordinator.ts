/**
 * The cluster coordinator of one replica: which accounts this `boxwatch run` process leads, kept
 * in per-account leases (leases.ts) shared by every replica of the database. It decides; the app
 * does the work (`AccountWork`: start an account's polling, evaluation and delivery with a fence,
 * stop it).
 *
 * Every round (`tick`, every lease/3):
 * - it refreshes this replica's heartbeat (with the id of its archive directory, once known:
 *   `archive`, read by the other replicas' archivers) and renews every lease it holds; a renewal
 *   refused (the lease changed hands) stops that account's work at once;
 * - it tells whether another process runs under this replica's id (two given one `replica_id`
 *   by mistake: they would both work the same leases): the heartbeat says who beat under the id
 *   last, and another instance (leases.ts, `instance`) than this one since this one's own last
 *   heartbeat is a process alive now (an earlier life of a restarted replica never beats again).
 *   Logged at `error` once, with the fix, and shown (`sharedWith`: the gauge
 *   `boxwatch_replica_id_conflict`; with the next heartbeats, the replica's row, which
 *   `boxwatch status` reads) until the other has not been seen for a lease time (a round
 *   that finds nobody else beat since may just be one where the two rounds crossed in phase);
 * - it releases a lease the rows say it holds but that it does not know it holds, where it may
 *   have made one (`unsure`): an `acquire` it gave up waiting for whose transaction committed all
 *   the same, a `release` that did not finish, a lease past its step-down deadline: so such a
 *   lease is free again within a round, not left unworked until it expires. Only these: a lease
 *   of the same replica id that another process may be working (an earlier life of a replica
 *   restarted under its `replica_id`, which may only be frozen; two processes given one id by
 *   mistake) runs until it expires, as any other replica's;
 * - it counts the live replicas (heartbeat newer than the lease time) and plans the balance from
 *   the rows (`planBalance`), the same plan on every replica that reads the same rows:
 *   - nobody holds more than its fair share, ceil(accounts / replicas): a replica above it releases
 *     its extras (a new replica started), after their work has stopped (`stop` resolves at the end
 *     of the cycle or send in flight), so a new replica gets its share without a send being made
 *     twice;
 *   - a free or expired lease goes to the live replica with the fewest leases (then the lowest id);
 *     when that is this replica, it takes it;
 *   - a replica within its fair share keeps what it holds: a restarted replica does not get its
 *     accounts back while the others are balanced. Only a real imbalance (one replica holding two
 *     more than another, counting the free leases as taken) moves a lease, one at a time, given up
 *     by the one replica holding the most (then the highest id).
 *
 * Stepping down: a lease is renewed every lease/3. When renewals fail (the database unreachable,
 * calls timing out), the account's work stops at `deadline` = start of the last good renewal +
 * lease - lease/3 (checked by its own timer, whatever the database calls do), a third of the
 * lease before any other replica can take it over; `holds(account)` is false from then on, so
 * work checks it before each cycle, claim and send. That is about timing; correctness does not
 * depend on it: every write carries the fence, which the store checks (leases.ts).
 */
import { randomBytes } from 'node:crypto';
import type { Clock } from '../clock.js';
import { errorMessage } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import { DEFAULT_LEASE_MS, fenceOf, replicaLive, type Fence, type Lease, type LeaseRepository, type PreviousBeat, type Replica, type ReplicaInfo } from '../domain/leases.js';

/** What the app does for an account this replica leads. */
export interface AccountWork {
  /** Starts the account's work; its writes carry `fence`. */
  start(account: string, fence: Fence): void;
  /**
   * Stops the account's work at once: no new cycle, claim or send begins. Resolves when what was
   * in flight has ended (awaited before a lease is released; not awaited when it was lost).
   */
  stop(account: string, why: 'lost' | 'deadline' | 'released' | 'shutdown'): Promise<void>;
}

export interface CoordinatorOptions {
  repo: LeaseRepository;
  replica: ReplicaInfo;
  /** The configured accounts. */
  accounts: () => readonly string[];
  work: AccountWork;
  clock: Clock;
  /** How long a lease lasts without renewal (default 30 s); renewed every third of it. */
  leaseMs?: number;
  logger?: Logger;
  /** The id of this replica's archive directory, announced with each heartbeat (null or absent: none yet, or no archive). */
  archive?: () => string | null;
}

interface Held {
  fence: Fence;
  /** Past this (this replica's clock) the account's work stops, renewed or not. */
  deadline: number;
  /** Being given up: its work is stopping; still renewed until released. */
  releasing: boolean;
}

export class Coordinator {
  readonly leaseMs: number;
  private readonly held = new Map<string, Held>();
  /**
   * Accounts whose lease this replica may hold without knowing it, until when (this replica's
   * clock): an acquire or release given up on, a lease dropped at its deadline. Past that time
   * such a lease has expired anyway.
   */
  private readonly unsure = new Map<string, number>();
  private readonly log: Logger;
  private ticking: Promise<void> | null = null;
  private readonly stopper = new AbortController();
  private loops: Promise<void>[] = [];
  private stopped = false;
  /** Whether a heartbeat of this process was written: from then on the row is this process's unless another one beats. */
  private beaten = false;
  /** Another process beating under this replica's id, as last found (null: none). */
  private shared: PreviousBeat | null = null;
  /** When (this replica's clock) a heartbeat last found `shared` beating. */
  private sharedSeenAt = -Infinity;

  constructor(private readonly o: CoordinatorOptions) {
    this.leaseMs = o.leaseMs ?? DEFAULT_LEASE_MS;
    this.log = o.logger ?? silentLogger;
  }

  /** How often leases are renewed and the balance looked at. */
  get intervalMs(): number {
    return Math.max(1, Math.floor(this.leaseMs / 3));
  }

  /** Whether this replica leads `account` now (held and not past its step-down deadline). */
  holds(account: string): boolean {
    const h = this.held.get(account);
    return h !== undefined && !h.releasing && this.o.clock.now() < h.deadline;
  }

  /** The fence of a lease this replica leads now, else undefined. */
  fence(account: string): Fence | undefined {
    return this.holds(account) ? this.held.get(account)?.fence : undefined;
  }

  /** The accounts this replica leads now, sorted. */
  leading(): string[] {
    return [...this.held.keys()].filter((a) => this.holds(a)).sort();
  }

  /** Another process found beating under this replica's id since this one's last heartbeat (null: none). */
  sharedWith(): PreviousBeat | null {
    return this.shared;
  }

  /** The fences of the accounts this replica leads now (what its dispatcher claims with). */
  fences(): Fence[] {
    return this.leading().flatMap((a) => this.fence(a) ?? []);
  }

  /**
   * A fenced write of `fence` was refused (LeaseLostError): the lease changed hands. That
   * account's work stops at once, without waiting for the next renewal to find out.
   */
  lost(fence: Fence): void {
    const h = this.held.get(fence.account);
    if (h === undefined || h.fence.token !== fence.token) return;
    this.held.delete(fence.account);
    if (h.releasing) return;
    this.log.error({ account: fence.account, token: fence.token }, 'a write was refused: another replica holds this account now; stopping its work');
    void this.o.work.stop(fence.account, 'lost');
  }

  /** One round: heartbeat, renewals, balance. A round still running makes this one wait for it. */
  tick(): Promise<void> {
    this.ticking ??= this.round().finally(() => {
      this.ticking = null;
    });
    return this.ticking;
  }

  /** Stops the work of every lease past its deadline (the database has not answered in time). */
  checkDeadlines(): void {
    const now = this.o.clock.now();
    for (const [account, h] of this.held) {
      if (now < h.deadline) continue;
      this.held.delete(account);
      this.unsure.set(account, now + this.leaseMs);
      if (h.releasing) continue; // its work is stopping already
      this.log.error({ account, token: h.fence.token }, 'lease not renewed in time (database unreachable?): stopping this account before another replica can take it over');
      void this.o.work.stop(account, 'deadline');
    }
  }

  /** Runs the rounds and the deadline checks on the clock until `stop()`. */
  start(): void {
    const signal = this.stopper.signal;
    const every = async (ms: number, fn: () => void): Promise<void> => {
      while (!signal.aborted) {
        try {
          fn();
        } catch (err) {
          this.log.error({ err: errorMessage(err) }, 'cluster coordinator round failed');
        }
        await this.o.clock.sleep(ms, signal).catch(() => undefined);
      }
    };
    this.loops = [every(this.intervalMs, () => void this.tick()), every(Math.min(1_000, this.intervalMs), () => this.checkDeadlines())];
  }

  /** Stops the rounds, stops the work of every account led, releases their leases and leaves. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.stopper.abort(new Error('stopping'));
    await Promise.all(this.loops);
    await this.ticking?.catch(() => undefined);
    const held = [...this.held.entries()];
    this.held.clear();
    await Promise.all(held.filter(([, h]) => !h.releasing).map(([account]) => this.o.work.stop(account, 'shutdown')));
    try {
      for (const [, h] of held) await this.o.repo.release(h.fence);
      await this.o.repo.leave(this.o.replica.id);
    } catch (err) {
      this.log.warn({ err: errorMessage(err) }, 'could not release the leases at shutdown; they expire by themselves');
    }
  }

  private async round(): Promise<void> {
    if (this.stopped) return;
    const { repo, replica, clock } = this.o;
    const started = clock.now();
    try {
      // The conflict as last found goes with the heartbeat, for `boxwatch status` (a round late).
      const shared = this.shared === null ? null : { host: this.shared.host, pid: this.shared.pid };
      this.noteBeat(await this.bounded(repo.heartbeat({ ...replica, sharedWith: shared, archive: this.o.archive?.() ?? null }, started)), started);
      await this.renewAll(started);
      const [replicas, leases] = [await this.bounded(repo.replicas()), await this.bounded(repo.leases())];
      if (this.stopped) return;
      await this.balance(clock.now(), replicas, leases);
    } catch (err) {
      // The database did not answer: leases stay until their deadline (checkDeadlines), then stop.
      this.log.warn({ err: errorMessage(err), leading: this.leading() }, 'cluster round failed; leases not renewed stop at their deadline');
    }
  }

  /**
   * What this heartbeat replaced: after one of this process's own, another instance there is another
   * process beating now. The two processes' rounds drift in phase, so now and then one beats twice
   * between two beats of the other: the conflict ends only when the other has not been seen for a
   * lease time (three rounds), as a replica whose heartbeat is that old is taken for gone.
   */
  private noteBeat(before: PreviousBeat | null, now: number): void {
    const { id, instance } = this.o.replica;
    const other = this.beaten && instance !== undefined && before !== null && before.instance !== instance ? before : null;
    this.beaten = true;
    if (other !== null) {
      if (this.shared === null) {
        this.log.error(
          { replica: id, other: { host: other.host, pid: other.pid } },
          'another boxwatch process runs with this replica_id: both would work the same accounts; give each replica its own replica_id (cluster.replica_id), or none (then each process gets its own)',
        );
      }
      this.shared = other;
      this.sharedSeenAt = now;
    } else if (this.shared !== null && now - this.sharedSeenAt >= this.leaseMs) {
      this.log.info({ replica: id }, 'no other process runs with this replica_id any more');
      this.shared = null;
    }
  }

  private async renewAll(now: number): Promise<void> {
    for (const [account, h] of [...this.held]) {
      const lease = await this.bounded(this.o.repo.renew(h.fence, now, this.leaseMs));
      if (this.held.get(account) !== h) continue; // stopped meanwhile (deadline)
      if (lease === null) {
        this.held.delete(account);
        if (h.releasing) continue;
        this.log.error({ account, token: h.fence.token }, 'lease lost: another replica holds this account now; stopping its work');
        void this.o.work.stop(account, 'lost');
        continue;
      }
      h.deadline = this.deadlineAfter(now);
    }
  }

  private async balance(now: number, replicas: readonly Replica[], leases: readonly Lease[]): Promise<void> {
    const me = this.o.replica.id;
    const accounts = [...new Set(this.o.accounts())].sort();
    for (const account of [...this.held.keys()]) if (!accounts.includes(account)) this.giveUp(account); // no longer configured
    const live = replicas.filter((r) => r.id === me || replicaLive(r, now, this.leaseMs)).map((r) => r.id);
    if (!live.includes(me)) live.push(me);
    live.sort();
    const holders = new Map<string, string | null>();
    for (const account of accounts) {
      const l = leases.find((x) => x.account === account);
      const running = l !== undefined && l.holder !== null && l.expiresAt > now;
      holders.set(account, running ? (l.holder as string) : null);
      const unsure = (this.unsure.get(account) ?? -Infinity) > now;
      if (running && l.holder === me && !this.held.has(account) && unsure && (await this.releaseUnknown(fenceOf({ ...l, holder: me })))) holders.set(account, null);
    }
    for (const [account, until] of this.unsure) if (until <= now) this.unsure.delete(account);
    const plan = planBalance(accounts, live, holders);

    // Above the fair share: give the extras up (released once their work stopped), the last accounts first.
    const mine = accounts.filter((a) => this.held.has(a) && !(this.held.get(a) as Held).releasing);
    for (const account of mine.slice(plan.ceiling)) this.giveUp(account);
    // Imbalance: the one replica the plan names gives one account up, unless it is releasing one already.
    const releasing = [...this.held.values()].some((h) => h.releasing);
    if (plan.shedder === me && !releasing && mine.length > 0) this.giveUp(mine[mine.length - 1] as string);

    for (const [account, taker] of plan.takers) {
      if (taker !== me || this.stopped) continue;
      // Given up on (timeout), it may commit all the same: unsure until a lease taken now would have expired.
      this.unsure.set(account, now + this.leaseMs);
      const lease = await this.bounded(this.o.repo.acquire(account, me, now, this.leaseMs));
      this.unsure.delete(account);
      if (lease === null || lease.holder === null) continue; // another replica was quicker
      const fence = fenceOf({ ...lease, holder: lease.holder });
      this.held.set(account, { fence, deadline: this.deadlineAfter(now), releasing: false });
      this.log.info({ account, token: fence.token }, 'lease taken: this replica leads the account');
      this.o.work.start(account, fence);
    }
  }

  /**
   * A running lease of this replica that it does not hold (its acquire timed out here but committed
   * on the server; a release that did not finish; a lease past its step-down deadline): released,
   * so that it is free at once rather than unworked until it expires. True when it is free now.
   */
  private async releaseUnknown(fence: Fence): Promise<boolean> {
    const released = await this.bounded(this.o.repo.release(fence));
    if (released) this.log.warn({ account: fence.account, token: fence.token }, 'released a lease this replica held without working it (an acquire or release that timed out but went through)');
    return released;
  }

  /**
   * Stops the account's work and releases its lease once the work has stopped (a cycle or send in
   * flight ends first: nothing is done twice); the lease is renewed meanwhile. Not awaited by the round.
   */
  private giveUp(account: string): void {
    const h = this.held.get(account);
    if (h === undefined || h.releasing) return;
    h.releasing = true;
    this.log.info({ account, token: h.fence.token }, 'releasing a lease above this replica’s share');
    void this.o.work
      .stop(account, 'released')
      .then(async () => {
        if (this.held.get(account) !== h) return; // lost or expired meanwhile
        this.held.delete(account);
        this.unsure.set(account, this.o.clock.now() + this.leaseMs); // until the release is known done
        await this.bounded(this.o.repo.release(h.fence));
        this.unsure.delete(account);
      })
      .catch((err: unknown) => this.log.warn({ account, err: errorMessage(err) }, 'could not release a lease; it expires by itself'));
  }

  /** When work stops if the renewal started at `at` is the last good one. */
  private deadlineAfter(at: number): number {
    return at + this.leaseMs - this.intervalMs;
  }

  /** A database call that gives up after one interval (a cut connection may never answer). */
  private async bounded<T>(call: T | Promise<T>): Promise<T> {
    const timeout = new AbortController();
    try {
      return await Promise.race([
        Promise.resolve(call),
        this.o.clock.sleep(this.intervalMs, timeout.signal).then(() => {
          throw new Error(`the database did not answer within ${this.intervalMs} ms`);
        }),
      ]);
    } finally {
      timeout.abort();
    }
  }
}

/** A replica id unique per process life: host, pid and a random part. */
export function newReplicaId(host: string, pid: number): string {
  return `${host}-${pid}-${randomBytes(3).toString('hex')}`;
}

/** What one round of the balance decides from the rows; every replica reading the same rows plans the same. */
export interface BalancePlan {
  /** The fair share: ceil(accounts / live replicas). A replica above it releases its extras. */
  ceiling: number;
  /** Who takes each free account: the live replica with the fewest leases (counting the free ones given before), then the lowest id. */
  takers: Map<string, string>;
  /** The one replica that gives one account up for balance (it holds two more than another, counting the takers), else undefined. */
  shedder: string | undefined;
}

/**
 * The balance of `accounts` over the `live` replica ids (sorted), from who holds each account
 * now (`holders`: a running lease's holder, live or not; null when free or expired). A replica
 * within its fair share keeps what it holds; leases move only to free what is above the fair
 * share or to even out a difference of two or more, one lease at a time.
 */
export function planBalance(accounts: readonly string[], live: readonly string[], holders: ReadonlyMap<string, string | null>): BalancePlan {
  const count = new Map(live.map((id) => [id, 0]));
  for (const holder of holders.values()) if (holder !== null && count.has(holder)) count.set(holder, (count.get(holder) as number) + 1);
  const ceiling = Math.ceil(accounts.length / Math.max(1, live.length));
  const takers = new Map<string, string>();
  for (const account of accounts) {
    if (holders.get(account) !== null) continue; // held (a holder not counted live keeps it until it expires)
    const taker = pickBy(live, (a, b) => (count.get(a) as number) - (count.get(b) as number) || compareIds(a, b));
    takers.set(account, taker);
    count.set(taker, (count.get(taker) as number) + 1);
  }
  const counts = [...count.values()];
  const shedder = Math.max(...counts) - Math.min(...counts) >= 2 ? pickBy(live, (a, b) => (count.get(b) as number) - (count.get(a) as number) || compareIds(b, a)) : undefined;
  return { ceiling, takers, shedder };
}

/** The first of `ids` in the order of `compare`. */
function pickBy(ids: readonly string[], compare: (a: string, b: string) => number): string {
  return [...ids].sort(compare)[0] as string;
}

function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
