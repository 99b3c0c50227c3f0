/**
 * Each account's polling on its schedule: a tick runs the account's cycle (src/poller/cycle.ts),
 * whose commit is one store transaction with the alert stage (`commitCycle`); then the cycle's part
 * of the fleet is published, and the observers run in the order given (metrics, the heartbeat, the
 * live event, grouping, ...).
 * A cycle that stored nothing (the transaction failed, the lease was lost, shutdown) runs none.
 * Replicas: an account is polled only by the replica that leads it, its write fenced.
 */
import type { AlertPipeline, CycleAlerts } from '../alerts/pipeline.js';
import type { CycleCommitter } from '../alerts/repositories.js';
import type { AlertItem } from '../domain/notifications.js';
import type { AlertState } from '../alerts/types.js';
import type { Awaitable } from '../awaitable.js';
import type { Clock } from '../clock.js';
import { isLeaseLost, type Fence } from '../domain/leases.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { redactUrl } from '../redact.js';
import { storeFailureCode } from '../store/errors.js';
import type { BoxState, Store } from '../domain/store.js';
import { isoTime } from '../time-format.js';
import type { AccountRun } from './accounts.js';
import { gatewaySkew, runCycle, type CycleResult } from './cycle.js';
import { startScheduler, type Scheduler } from './scheduler.js';

/** A cycle as it was stored, with what its alert stage decided. */
export interface AccountCycle extends CycleResult {
  alerts: CycleAlerts | null;
}

/** What a cycle's commit left of its part of the fleet (its account's boxes and alerts), for the fleet snapshot. */
export interface CommittedPart {
  startedAt: number;
  /** The cycle's account, and the accounts it removed from the fleet. */
  accounts: string[];
  boxes: BoxState[];
  states: ReadonlyMap<string, AlertState>;
}

/** The whole fleet's boxes and alerts as of the last cycles, and the version of that view. */
export interface FleetView {
  boxes: BoxState[];
  states: ReadonlyMap<string, AlertState>;
  version: number;
}

/** What observers are told after a stored cycle. */
export interface StoredCycle {
  run: AccountRun;
  cycle: AccountCycle;
  committed: CommittedPart;
  /** The whole fleet after this cycle (its committed part published before any observer runs), read once per cycle. */
  view(): Promise<FleetView>;
}

/** Something that follows every stored cycle; observers run one after the other, in order. */
export type CycleObserver = (stored: StoredCycle) => Awaitable<void>;

export interface AccountLoop {
  /** Starts each account's schedule (until then ticks come only from runOnce). */
  start(): void;
  /** One cycle now of `account`, or of every account in turn (the last one's result); undefined when the tick was skipped. */
  runOnce(account?: string): Promise<AccountCycle | undefined>;
  /** The account's cycle in flight, if any (a lease given up waits for it). */
  inFlight(account: string): Promise<void> | undefined;
  readonly skippedTicks: number;
  /** Stops the schedules and waits for the cycles in flight. */
  stop(): Promise<void>;
}

export interface AccountLoopOptions {
  accounts: readonly AccountRun[];
  /** The store: what a cycle reads, and its write with the alert stage in one transaction. */
  store: Store & CycleCommitter<AlertItem>;
  /** The alert stage run inside each cycle's transaction (AlertPipeline). */
  pipeline: Pick<AlertPipeline, 'decide' | 'scope'>;
  detailsEveryMs: number;
  timezone: string;
  clock: Clock;
  /** The clock the schedules tick on (the demo's is real time while `clock` is the simulator's). */
  scheduleClock: Clock;
  logger: Logger;
  metrics: Pick<Metrics, 'observeCycle' | 'clockSteppedBack' | 'tickSkipped' | 'cycleCrashed'>;
  /** Which accounts this process polls: `claim` gives the write's fence, null when another replica leads the account. */
  leadership: { claim(account: string): { fence: Fence | undefined } | null; lost(fence: Fence): void };
  /** What a tick of an account another replica leads does instead. */
  notLed: () => Promise<void>;
  /** The fleet snapshot: each stored cycle's committed part is published into it, and its view read after. */
  fleet: { publish(committed: CommittedPart): void; view(): Promise<FleetView> };
  observers: readonly CycleObserver[];
  /** Aborted at shutdown: the cycle in flight is abandoned and records nothing. */
  signal: AbortSignal;
}

/** Set while runOnce waits for an account's cycle, which leaves its result there. */
interface CycleWaiter {
  result?: AccountCycle;
}

export function createAccountLoop(o: AccountLoopOptions): AccountLoop {
  const { store, clock, logger, metrics, signal } = o;
  /** Per account, its cycle in flight. */
  const cycling = new Map<string, Promise<void>>();
  /**
   * Per account, the runOnce waiting for its cycle. Only then is a result kept: one kept until
   * the next cycle would have its snapshots outlive the cycle and be promoted by the garbage collector.
   */
  const awaited = new Map<AccountRun, CycleWaiter>();

  const cycle = (run: AccountRun): Promise<void> => {
    const name = run.config.name;
    const claim = o.leadership.claim(name);
    if (claim === null) return o.notLed();
    const { fence } = claim;
    const p = cycleWith(run, fence).catch((err: unknown) => {
      if (fence === undefined || !isLeaseLost(err)) throw err;
      logger.error({ account: name }, 'poll cycle not stored: another replica leads this account now');
      o.leadership.lost(fence);
    });
    cycling.set(name, p);
    return p;
  };

  const cycleWith = async (run: AccountRun, fence: Fence | undefined): Promise<void> => {
    const { config: account, client } = run;
    // Both set by the commit below, which runCycle calls (TypeScript cannot see that: `as` keeps them from narrowing to null).
    let cycleAlerts = null as CycleAlerts | null;
    let committed = null as CommittedPart | null;
    const startedAt = clock.now();
    let result: CycleResult;
    try {
      result = await runCycle({
        account: account.name,
        client,
        store,
        clock,
        logger,
        concurrency: account.concurrency,
        policy: { detailsEveryMs: o.detailsEveryMs, tickIntervalMs: run.tickIntervalMs },
        deadlineMs: run.cycleDeadlineMs,
        quarantine: run.quarantine,
        requestCount: run.requestCount,
        signal,
        commit: async (write) => {
          const now = clock.now();
          // last_seen is stored on our clock already (the poller corrects the gateway's skew).
          let boxes: BoxState[] = [];
          // The cycle reads only its part of the fleet (its account's boxes and alerts).
          const { recorded, result } = await store.commitCycle(write, now, (view) => {
            boxes = view.boxes; // the cycle's part of the fleet as it left it: the snapshot's
            return o.pipeline.decide(write.cycle, view, now, null);
          }, fence, o.pipeline.scope(account.name));
          cycleAlerts = result;
          if (result.forgotten.length > 0) logger.warn({ serials: result.forgotten }, 'boxes missing longer than forget_after were forgotten (their history is kept)');
          if (result.removedAccounts !== null) {
            const { accounts: removed, alerts: retired, boxes: left } = result.removedAccounts;
            logger.warn({ accounts: removed, alerts: retired, boxes: left.length }, 'accounts no longer in the configuration: their alerts are resolved and their boxes left the fleet (their history is kept)');
          }
          // The fleet without the boxes this cycle made leave it.
          const gone = new Set([...result.forgotten, ...(result.removedAccounts?.boxes ?? [])]);
          committed = {
            startedAt: recorded.startedAt,
            accounts: [account.name, ...(result.removedAccounts?.accounts ?? [])],
            boxes: gone.size === 0 ? boxes : boxes.filter((b) => !gone.has(b.serial)),
            states: result.states, // the alerts of the cycle's part as it left them
          };
          if (recorded.clockBehindMs > 0) {
            logger.warn(
              { behindMs: recorded.clockBehindMs, recordedAt: isoTime(recorded.startedAt) },
              'the clock stepped back behind the last recorded cycle; this cycle is recorded just after it',
            );
            metrics.clockSteppedBack();
          }
        },
      });
    } catch (err) {
      if (signal.aborted) {
        logger.info('poll cycle abandoned at shutdown; nothing of it was recorded');
        return;
      }
      // The cycle's transaction failed (database locked past busy_timeout, disk full, ...): it rolled
      // back whole, so the stored history and alert state are as before this cycle. Counted as a
      // failed cycle; the next one tries again.
      const code = storeFailureCode(err);
      if (code === undefined) throw err; // a bug: the scheduler logs it as a crash
      logger.error({ account: account.name, code, err: errorMessage(err) }, 'poll cycle could not be stored; its data is dropped and the next cycle tries again');
      metrics.observeCycle({ startedAt, durationMs: clock.now() - startedAt, requests: 0, outcome: 'failed', errorCode: code, error: errorMessage(err), boxes: 0, detailsFetched: 0, account: account.name });
      return;
    }
    if (committed === null) throw new Error('runCycle returned without committing its cycle');
    const done: AccountCycle = { ...result, alerts: cycleAlerts };
    const waiter = awaited.get(run);
    if (waiter !== undefined) waiter.result = done;
    if (result.serverTime !== null) run.skewMs = gatewaySkew(result.serverTime, result.cycle.startedAt);
    // Published before any observer runs, so that whichever reads the view first sees this cycle in it.
    o.fleet.publish(committed);
    // The whole fleet's alerts and boxes, brought up to date once (one read of the latest cycles)
    // for every observer that asks.
    let view: Promise<FleetView> | undefined;
    const stored: StoredCycle = { run, cycle: done, committed, view: () => (view ??= o.fleet.view()) };
    for (const observe of o.observers) {
      const pending = observe(stored);
      if (pending instanceof Promise) await pending;
    }
  };

  const onSkip = (): void => metrics.tickSkipped();
  const onCrash = (): void => metrics.cycleCrashed();
  const schedulersOn = (timed: boolean): Scheduler[] =>
    o.accounts.map((run) => startScheduler({ ...(timed && { schedule: run.config.schedule, timezone: o.timezone }), task: () => cycle(run), logger, clock: o.scheduleClock, onSkip, onCrash }));
  // One scheduler per account (same order as `accounts`); they tick only when called (tests) until start().
  let schedulers = schedulersOn(false);

  return {
    start() {
      for (const s of schedulers) void s.stop();
      schedulers = schedulersOn(true);
    },
    async runOnce(account) {
      let result: AccountCycle | undefined;
      for (const [i, run] of o.accounts.entries()) {
        if (account !== undefined && run.config.name !== account) continue;
        // A runOnce already waiting on this account keeps its slot (this call's tick is then skipped).
        const mine = !awaited.has(run);
        const waiting: CycleWaiter = awaited.get(run) ?? {};
        awaited.set(run, waiting);
        try {
          await (schedulers[i] as Scheduler).tick();
        } finally {
          if (mine) awaited.delete(run);
        }
        result = waiting.result;
      }
      return result;
    },
    inFlight: (account) => cycling.get(account),
    get skippedTicks() {
      return schedulers.reduce((n, s) => n + s.skipped, 0);
    },
    async stop() {
      await Promise.all(schedulers.map((s) => s.stop()));
    },
  };
}

/** The start's log line: what is polled, how often, into which database. */
export function logPolling(logger: Logger, accounts: readonly AccountRun[], db: string): void {
  const [first] = accounts;
  if (accounts.length === 1 && first !== undefined) logger.info({ schedule: first.config.schedule, gateway: redactUrl(first.config.baseUrl), db }, 'boxwatch polling');
  else logger.info({ accounts: accounts.map((a) => ({ account: a.config.name, schedule: a.config.schedule, gateway: redactUrl(a.config.baseUrl) })), db }, `boxwatch polling ${accounts.length} accounts`);
}
