/**
 * The outbox dispatcher: delivers queued messages per notifier, independently (a Slack outage
 * never delays e-mail: each notifier has its own loop and its own pause), with the retry policy of
 * retry.ts. The durable queue is an interface (`OutboxRepository`, outbox.ts) that the store
 * implements; the dispatcher keeps only soft state in memory (pauses).
 *
 * Order: within one notifier messages go out oldest first. After a transient failure the notifier
 * pauses until the failed message's next attempt, so a later message does not overtake it.
 * A pass claims its rows first, and passes of one notifier in this process run one after the
 * other, so a message is sent once however many passes are asked for (the loop and `deliverNow`).
 * A send that worked but could not be recorded (the database locked or full) is remembered in
 * memory: the notifier sends nothing more until that record is written, then carries on, so a
 * database that refuses writes never turns one message into a storm of copies.
 * Replicas (src/cluster/): a pass claims per fence of the `leadership` (one unfenced pass alone,
 * one per led account as a replica), each claim fenced (the store refuses it once the lease
 * changed hands), and checks before every send that the account is still led: a replica that
 * steps down sends nothing more, at most the one send already in flight.
 * Dead messages (permanent error, older than maxAge when an attempt fails, or their notifier was
 * removed from the configuration: `retireRemoved`) are reported on the other notifiers as one
 * `delivery_failure` message, at most once per `failureNoticeIntervalMs`. Both the dead rows and
 * whether they were reported are in the outbox, so a restart neither loses nor repeats a notice.
 */
import { ALONE, type Leadership } from '../cluster/leadership.js';
import { isLeaseLost, type Fence } from '../domain/leases.js';
import type { Clock } from '../clock.js';
import { abortWith } from '../abort.js';
import { errorMessage } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import { NotifyError } from './errors.js';
import { DEFAULT_RETRY_POLICY, decideAfterFailure, type RetryPolicy } from './retry.js';
import type { OutboxRepository, OutboxRow } from '../domain/outbox.js';
import type { DeliveryFailure, NotificationMessage, Notifier } from '../domain/notifications.js';
import { isoTime } from '../time-format.js';

export type { OutboxRepository, OutboxRow } from '../domain/outbox.js';

export type DeliveryResult = 'delivered' | 'retry' | 'dead';

export interface DeliveryOutcome {
  notifier: string;
  id: number;
  result: DeliveryResult;
  /** Attempts including this one. */
  attempts: number;
  error?: string;
  /** For `retry`. */
  nextAttemptAt?: number;
}

export interface DispatcherOptions {
  notifiers: readonly Notifier[];
  queue: OutboxRepository;
  clock: Clock;
  policy?: Partial<RetryPolicy>;
  /** Rows fetched per pass (default 20). */
  batchSize?: number;
  /** How often an idle notifier looks for new rows (default 5 s); `wake()` makes it look at once. */
  pollIntervalMs?: number;
  /** Upper bound of one send (default 60 s; the channels have their own, shorter timeouts). */
  sendTimeoutMs?: number;
  /** At most one delivery-failure notice per failing notifier per interval (default 1 h). */
  failureNoticeIntervalMs?: number;
  logger?: Logger;
  /** Called after every attempt (metrics). */
  onOutcome?: (outcome: DeliveryOutcome) => void;
  /** Aborts the sends in flight (shutdown after a grace period); an aborted send is retried later. */
  signal?: AbortSignal;
  /**
   * Which accounts' rows this process claims and sends, under which fences, and whom to tell when
   * a fenced claim is refused (src/cluster/leadership.ts). Absent: it runs alone, every row unfenced.
   */
  leadership?: Pick<Leadership, 'fences' | 'lost'>;
}

export interface PassResult {
  delivered: number;
  retried: number;
  dead: number;
  /** True when a full batch went out: there may be more due now. */
  more: boolean;
}

export class Dispatcher {
  private readonly notifiers: ReadonlyMap<string, Notifier>;
  private readonly policy: RetryPolicy;
  private readonly log: Logger;
  private readonly leadership: Pick<Leadership, 'fences' | 'lost'>;
  private readonly pausedUntil = new Map<string, number>();
  /** Per notifier: rows sent but not yet recorded as delivered (row id -> when it was sent). */
  private readonly unrecorded = new Map<string, Map<number, number>>();
  /** The delivery in flight per notifier: the next one waits for it. */
  private readonly passes = new Map<string, Promise<PassResult>>();
  private flushing: Promise<void> | null = null;
  private readonly sleepers = new Map<string, AbortController>();
  private loops: Promise<void>[] = [];
  private stopping = false;
  private readonly stopController = new AbortController();

  constructor(private readonly options: DispatcherOptions) {
    this.notifiers = new Map(options.notifiers.map((n) => [n.name, n]));
    this.policy = { ...DEFAULT_RETRY_POLICY, ...options.policy };
    this.log = options.logger ?? silentLogger;
    this.leadership = options.leadership ?? ALONE;
  }

  /** When the notifier may send again after a transient failure (undefined: not paused). */
  pausedUntilOf(notifier: string): number | undefined {
    return this.pausedUntil.get(notifier);
  }

  /**
   * One pass for one notifier: claims its due rows, delivers them in order, stops at the first
   * transient failure (and pauses the notifier until that row's next attempt), marks permanent
   * failures dead. A pass asked for while one runs for the same notifier runs after it.
   */
  async runOnce(name: string): Promise<PassResult> {
    if (!this.notifiers.has(name)) throw new Error(`unknown notifier "${name}"`);
    const before = this.passes.get(name);
    const pass = (async () => {
      await before?.catch(() => undefined);
      return this.pass(name);
    })();
    this.passes.set(name, pass);
    try {
      return await pass;
    } finally {
      if (this.passes.get(name) === pass) this.passes.delete(name);
    }
  }

  private async pass(name: string): Promise<PassResult> {
    const notifier = this.notifiers.get(name) as Notifier;
    const result: PassResult = { delivered: 0, retried: 0, dead: 0, more: false };
    const paused = this.pausedUntil.get(name);
    if (paused !== undefined && this.options.clock.now() < paused) return result;
    this.pausedUntil.delete(name);
    await this.recordUnrecorded(name); // throws while the database still refuses: nothing is sent

    const limit = this.options.batchSize ?? 20;
    for (const fence of this.leadership.fences()) {
      if (this.stopping || this.pausedUntil.has(name)) break;
      await this.passOf(notifier, fence, limit, result);
    }
    await this.flushNotices();
    return result;
  }

  /** Claims and delivers the due rows of one notifier (of one led account, with its fence). */
  private async passOf(notifier: Notifier, fence: Fence | undefined, limit: number, result: PassResult): Promise<void> {
    const name = notifier.name;
    const leaseMs = this.sendTimeoutMs() * limit + 60_000;
    let rows: OutboxRow[];
    try {
      rows = await this.options.queue.claim(name, this.options.clock.now(), limit, leaseMs, fence);
    } catch (err) {
      if (fence === undefined || !isLeaseLost(err)) throw err;
      this.log.warn({ notifier: name, account: fence.account }, 'outbox claim refused: this replica no longer leads the account');
      this.leadership.lost(fence);
      return;
    }
    let i = 0;
    try {
      for (; i < rows.length && !this.stopping && this.leads(fence); i++) {
        const row = rows[i] as OutboxRow;
        const error = await this.attempt(notifier, row);
        const now = this.options.clock.now();
        if (error === undefined) {
          try {
            await this.options.queue.markDelivered(row.id, now);
          } catch (err) {
            this.remember(name, row.id, now);
            i++;
            throw err;
          }
          result.delivered++;
          this.outcome({ notifier: name, id: row.id, result: 'delivered', attempts: row.attempts + 1 });
          continue;
        }
        const decision = decideAfterFailure(row, error, now, this.policy);
        if (decision.action === 'retry') {
          await this.options.queue.markFailed(row.id, now, error.message, decision.at);
          this.pausedUntil.set(name, decision.at);
          result.retried++;
          this.log.warn({ notifier: name, id: row.id, attempts: row.attempts + 1, retryAt: isoTime(decision.at), err: error.message }, 'notification failed, will retry');
          this.outcome({ notifier: name, id: row.id, result: 'retry', attempts: row.attempts + 1, error: error.message, nextAttemptAt: decision.at });
          i++;
          break;
        }
        await this.options.queue.markDead(row.id, now, error.message, { report: row.message.kind !== 'delivery_failure' });
        result.dead++;
        this.log.error({ notifier: name, id: row.id, attempts: row.attempts + 1, reason: decision.reason, err: error.message }, 'notification given up');
        this.outcome({ notifier: name, id: row.id, result: 'dead', attempts: row.attempts + 1, error: error.message });
      }
    } finally {
      // Claimed but not attempted (a transient failure paused the notifier, we are stopping, or the
      // account is no longer led: the next leader gets them at once anyway).
      if (i < rows.length) await this.options.queue.unclaim(rows.slice(i).map((r) => r.id));
    }
    if (rows.length === limit && result.retried === 0 && !this.stopping) result.more = true;
  }

  /** Whether this process still leads the fence's account (the unfenced pass of a process alone: always). */
  private leads(fence: Fence | undefined): boolean {
    return this.leadership.fences().some((f) => f?.account === fence?.account && f?.token === fence?.token);
  }

  private remember(name: string, id: number, at: number): void {
    const rows = this.unrecorded.get(name) ?? new Map<number, number>();
    rows.set(id, at);
    this.unrecorded.set(name, rows);
    this.log.error({ notifier: name, id }, 'notification sent but not recorded (database refuses writes); nothing more is sent until it is');
  }

  /** Records the remembered deliveries of a notifier; throws (leaving the rest) while the database refuses. */
  private async recordUnrecorded(name: string): Promise<void> {
    const rows = this.unrecorded.get(name);
    if (rows === undefined) return;
    for (const [id, at] of rows) {
      await this.options.queue.markDelivered(id, at);
      rows.delete(id);
      this.log.info({ notifier: name, id }, 'notification sent earlier recorded as delivered');
    }
    this.unrecorded.delete(name);
  }

  /**
   * Marks dead every waiting row of a notifier that is no longer configured (removed or renamed
   * by a reload), to be reported once on the remaining notifiers. Returns the rows marked.
   */
  async retireRemoved(): Promise<number> {
    const marked = await this.options.queue.retire([...this.notifiers.keys()], this.options.clock.now(), (n) => `notifier "${n}" is no longer configured`);
    if (marked > 0) {
      this.log.warn({ messages: marked }, 'messages for notifiers no longer configured were given up');
      await this.flushNotices();
    }
    return marked;
  }

  /** Resolves when the passes in flight have ended (a replica giving an account up waits for its sends). */
  async idle(): Promise<void> {
    await Promise.all([...this.passes.values()].map((p) => p.catch(() => undefined)));
  }

  /** One pass for every notifier, concurrently. */
  async runAllOnce(): Promise<Map<string, PassResult>> {
    const names = [...this.notifiers.keys()];
    const results = await Promise.all(names.map((n) => this.runOnce(n)));
    return new Map(names.map((n, i) => [n, results[i] as PassResult]));
  }

  /** Starts one delivery loop per notifier. */
  start(): void {
    if (this.loops.length > 0) return;
    this.loops = [...this.notifiers.keys()].map((n) => this.loop(n));
  }

  /** New rows were queued: idle loops look at once (paused ones keep their pause). */
  wake(): void {
    for (const controller of this.sleepers.values()) controller.abort();
  }

  /** Stops the loops; a send in flight is allowed to finish (bounded by sendTimeoutMs). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.stopController.abort();
    this.wake();
    await Promise.all(this.loops);
    this.loops = [];
  }

  /** Closes every notifier's connections. */
  async close(): Promise<void> {
    await Promise.all([...this.notifiers.values()].map((n) => n.close?.()));
  }

  private async loop(name: string): Promise<void> {
    while (!this.stopping) {
      let more = false;
      let failed = false;
      try {
        more = (await this.runOnce(name)).more;
      } catch (err) {
        // The outbox could not be read or updated (database locked or full). Wait a poll interval
        // rather than at once retrying a row whose send may have succeeded.
        failed = true;
        this.log.error({ notifier: name, err: errorMessage(err) }, 'outbox pass failed');
      }
      if (more || this.stopping) continue;
      const now = this.options.clock.now();
      let wakeAt = now + (this.options.pollIntervalMs ?? 5_000);
      const paused = this.pausedUntil.get(name);
      if (paused !== undefined) {
        wakeAt = paused;
      } else if (!failed) {
        try {
          const next = await this.options.queue.nextDue(name);
          if (next !== null) wakeAt = Math.min(wakeAt, Math.max(next, now));
        } catch (err) {
          this.log.error({ notifier: name, err: errorMessage(err) }, 'outbox query failed');
        }
      }
      if (wakeAt > now) await this.sleep(name, wakeAt - now, paused !== undefined);
    }
  }

  /** Sleeps until the time passes, or until wake() (unless paused) or stop(). */
  private async sleep(name: string, ms: number, paused: boolean): Promise<void> {
    const controller = new AbortController();
    if (!paused) this.sleepers.set(name, controller);
    const unlink = abortWith(this.stopController.signal, controller);
    try {
      await this.options.clock.sleep(ms, controller.signal);
    } catch {
      // woken up
    } finally {
      unlink();
      if (this.sleepers.get(name) === controller) this.sleepers.delete(name);
    }
  }

  /** Sends one row; returns the failure as a NotifyError, or undefined on success. */
  private async attempt(notifier: Notifier, row: OutboxRow): Promise<NotifyError | undefined> {
    const send = new AbortController();
    const unlinkTimeout = abortWith(AbortSignal.timeout(this.sendTimeoutMs()), send);
    const unlinkDaemon = abortWith(this.options.signal, send);
    try {
      await notifier.send(row.message, send.signal);
      return undefined;
    } catch (err) {
      if (err instanceof NotifyError) return err;
      // A channel bug or an unexpected error: retried, with only its message (channels never put secrets there).
      return new NotifyError('notify_failed', notifier.name, errorMessage(err), { retryable: true });
    } finally {
      unlinkTimeout();
      unlinkDaemon();
    }
  }

  /** Reports dead messages whose notifier's interval has passed (one notice at a time in this process). */
  private async flushNotices(): Promise<void> {
    while (this.flushing !== null) await this.flushing.catch(() => undefined);
    this.flushing = this.reportFailures();
    try {
      await this.flushing;
    } finally {
      this.flushing = null;
    }
  }

  /** Queues one delivery-failure message on every other notifier for the failing ones whose interval has passed. */
  private async reportFailures(): Promise<void> {
    const now = this.options.clock.now();
    // Replicas: the notices belong to an account this process leads (so that it sends them); one
    // that leads none leaves the reporting to the others. Alone: unfenced, no account.
    const fences = this.leadership.fences();
    if (fences.length === 0) return;
    const account = fences[0]?.account;
    const interval = this.options.failureNoticeIntervalMs ?? 3_600_000;
    const ready = (await this.options.queue.unreportedFailures()).filter((f) => f.lastReportedAt === null || now - f.lastReportedAt >= interval);
    if (ready.length === 0) return;
    const failures: DeliveryFailure[] = ready.map((f) => ({ notifier: f.notifier, failingSince: f.failingSince, dead: f.dead, lastError: f.lastError }));
    const failing = new Set(ready.map((f) => f.notifier));
    const message: NotificationMessage = { kind: 'delivery_failure', items: [], failures, createdAt: now };
    const targets = [...this.notifiers.keys()].filter((n) => !failing.has(n));
    // Replicas read the same failures: the first to report them queues the notice, the others nothing.
    const queued = await this.options.queue.report(
      ready.map((f) => ({ notifier: f.notifier, upToId: f.upToId })),
      targets.map((notifier) => ({ notifier, message })),
      now,
      account,
    );
    if (queued && targets.length > 0) this.wake();
  }

  private sendTimeoutMs(): number {
    return this.options.sendTimeoutMs ?? 60_000;
  }

  private outcome(outcome: DeliveryOutcome): void {
    try {
      this.options.onOutcome?.(outcome);
    } catch (err) {
      this.log.error({ err: errorMessage(err) }, 'onOutcome failed');
    }
  }
}
