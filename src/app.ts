/**
 * The composition root: wires the gateway client, the store, the poller, the alert pipeline and
 * the notification dispatcher from a Config.
 *
 *   tick -> runCycle (list + details) -> one transaction: cycle + samples + alert transitions +
 *   routed notifications -> grouper (group_wait) -> outbox -> dispatcher (retry per notifier)
 *
 * `createApp(deps)` returns an app that `start()`s its schedule and `stop()`s cleanly (the cycle in
 * flight finishes, the delivery in flight is recorded, the database is closed). Tests drive
 * `runOnce()` and `deliverNow()` instead of the timers.
 */
import { setMaxListeners } from 'node:events';
import { releaseReadyGroups } from './alerts/grouper.js';
import { announcedFiringItems } from './alerts/message.js';
import { AlertPipeline, type CycleAlerts } from './alerts/pipeline.js';
import type { AlertQueries } from './alerts/repositories.js';
import type { Clock } from './clock.js';
import { systemClock, timerDelay } from './clock.js';
import { redactUrl, type AccountConfig, type Config } from './config/index.js';
import { errorMessage } from './errors.js';
import { createGatewayClient } from './gateway/client.js';
import type { Endpoint, GatewayClient } from './gateway/types.js';
import type { Logger } from './log.js';
import type { LineSink } from './notify/console.js';
import { Dispatcher } from './notify/dispatcher.js';
import { notifiersFromConfig } from './notify/from-config.js';
import { looksLikeNotificationMessage, type OutboxRepository } from './domain/outbox.js';
import { Resender } from './notify/resend.js';
import { logTemplateFailure, type FleetStats } from './notify/templates.js';
import type { AlertState } from './alerts/types.js';
import type { Notifier } from './domain/notifications.js';
import { gatewaySkew, runCycle, type CycleResult } from './poller/cycle.js';
import { RecordQuarantine } from './poller/quarantine.js';
import { createHeartbeat, type Heartbeat } from './poller/heartbeat.js';
import { createLiveEvents } from './web/live.js';
import { scheduleIntervalMs, startScheduler, type Scheduler } from './poller/scheduler.js';
import { DAEMON_HEARTBEAT_MS, openDataStore, openSqliteFile, StoreError, type DaemonHold, type DataStore, type SqliteStore } from './store/index.js';
import { storeFailureCode } from './store/errors.js';
import { createHousekeeping, sqlitePathOf } from './store/housekeeping.js';
import { fleetSnapshot, startHttpServer, type RunningHttpServer } from './http/index.js';
import { createMetrics, type Metrics } from './metrics.js';
import type { BoxState } from './domain/store.js';
import { alertViewSource } from './views/alerts.js';
import { apiReader } from './views/api-reader.js';
import type { CallIngest, CallSyncResult } from './calls/index.js';
import { registerCallMetrics } from './calls/metrics.js';
import { createArchiver, registerArchiveMetrics, type ArchiveFs, type Archiver, type ArchivePassResult } from './archive/index.js';
import { createTestCalls, type TestCallAttempt, type TestCalls } from './calls/test-calls.js';
import { createReplica, type Replica } from './cluster/replica.js';
import { isLeaseLost, type Fence } from './domain/leases.js';
import { accountOf } from './box-id.js';
import { isoTime } from './time-format.js';
import { leadershipOf } from './cluster/leadership.js';
import { archiveJudge, callAndArchiveFacts } from './archive/judge.js';
import { archiveAfterSync } from './archive/schedule.js';
import { createCallIngests, createCallSchedules } from './calls/schedule.js';
import { createTestCallSchedules, refreshTestCalls } from './calls/test-call-schedule.js';

export interface AppDeps<S extends DataStore = DataStore> {
  config: Config;
  logger: Logger;
  clock?: Clock;
  /** Injected in tests: the first account's client; by default each account's is built from config.gateways. */
  client?: GatewayClient;
  /**
   * The store, which the app closes when it stops: opened by `openApp` (SQLite or PostgreSQL) or
   * injected in tests; without it, the SQLite file at config.storage.path.
   */
  store?: S;
  /** What keeps other daemons off the database (src/store/daemon-hold.ts); default the store's own hold. */
  hold?: DaemonHold;
  /** Injected in tests; by default built from config.notifiers. */
  notifiers?: Notifier[];
  /** Where the console notifier writes (default stdout). */
  stdout?: LineSink;
  /** Called after every cycle (the demo prints from it). */
  onCycle?: (result: AppCycle) => void;
  /** The recording archive's file-system boundary (tests fill the disk up); default node:fs. */
  archiveFs?: ArchiveFs;
  /**
   * How long `stop()` lets the cycle and the delivery in flight finish before it aborts their
   * requests (default 5 s, so that SIGTERM ends `boxwatch run` well within 10 s).
   */
  stopGraceMs?: number;
  /**
   * Milliseconds of `clock` per real millisecond: 1, or the demo's speed on the simulator's clock.
   * The schedule ticks in real time, so limits compared with `clock` (the health limit) scale by it.
   */
  clockRate?: number;
  /** The clock the schedules tick on (default `clock`): the demo's tick in real time while `clock` is the simulator's. */
  scheduleClock?: Clock;
  /**
   * Called when another daemon took the database over (this one's heartbeat had stopped for too
   * long): the app has stopped polling and delivering; `boxwatch run` ends with an error.
   */
  onLockLost?: (err: Error) => void;
}

export interface AppCycle extends CycleResult {
  alerts: CycleAlerts | null;
}

export interface App<S extends DataStore = DataStore> {
  readonly store: S;
  /** Alert states, transitions and silences as the CLI and the API read them. */
  readonly alerts: AlertQueries;
  readonly outbox: OutboxRepository;
  readonly metrics: Metrics;
  /** This replica's leases (null without `cluster:`: one daemon holds the database). */
  readonly replica: Replica | null;
  /** The HTTP server's address once started (null when `http: false`). */
  readonly httpUrl: string | null;
  /**
   * Takes the database (refused with StoreError `store_in_use` while another daemon holds it),
   * then starts the schedule, the grouper, the dispatcher and the HTTP server.
   */
  start(): Promise<void>;
  /**
   * One poll cycle now (no-overlap rules apply) of `account`, or of every account in turn (the
   * last one's result); undefined when the tick was skipped.
   */
  runOnce(account?: string): Promise<AppCycle | undefined>;
  /** Call ingestion of the first account (null without a `calls:` section); its repo holds every account's calls. */
  readonly calls: CallIngest | null;
  /** One call-sync cycle now (no-overlap rules apply) of `account`, or of every account in turn (the last one's result); undefined when skipped or calls are off. */
  runCallsOnce(account?: string): Promise<CallSyncResult | undefined>;
  /** The recording archive (null without an `archive:` section). */
  readonly archive: Archiver | null;
  /** Waits for the archive pass in flight and runs one more (tests); undefined without an archive. */
  runArchiveOnce(): Promise<ArchivePassResult | undefined>;
  /** Test calls (null without `test_calls:`). */
  readonly testCalls: TestCalls | null;
  /** One tick of every test-call entry's schedule now (or of the one named); what the attempts did. */
  runTestCallsOnce(entry?: string): Promise<TestCallAttempt[]>;
  /** Groups what is ready and runs one delivery pass for every notifier (tests, demo). */
  deliverNow(): Promise<void>;
  readonly skippedTicks: number;
  /**
   * Stops the schedule and the dispatcher, lets the cycle and the delivery in flight finish for up
   * to `stopGraceMs`, then aborts their requests (an abandoned cycle records nothing; an aborted
   * delivery stays pending), and closes client and store.
   */
  stop(): Promise<void>;
}

/** One account's polling: its client, schedule and the state its cycles keep. */
interface AccountRun {
  config: AccountConfig;
  client: GatewayClient;
  /** HTTP attempts of its client so far (a cycle records the difference). */
  requestCount: () => number;
  tickIntervalMs: number;
  cycleDeadlineMs: number;
  /** Its gateway clock's skew at the last cycle that told it. */
  skewMs: number | null;
  heartbeat: Heartbeat;
  /** Its logger (with its `account` when there are several). */
  logger: Logger;
  /** Records a device list may not hold, logged once per account (src/poller/quarantine.ts). */
  quarantine: RecordQuarantine;
  /**
   * Set while runOnce waits for this account's cycle, which leaves its result there. Only then is a
   * result kept: one kept until the next cycle would have its snapshots copied and promoted by the
   * garbage collector.
   */
  awaited: CycleWaiter | null;
}

/** Where a cycle leaves its result for runOnce. */
interface CycleWaiter {
  result?: AppCycle;
}

/** What a cycle's commit left of its part of the fleet (its account's boxes and alerts), for the fleet snapshot. */
interface CommittedPart {
  startedAt: number;
  /** The cycle's account, and the accounts it removed from the fleet. */
  accounts: string[];
  boxes: BoxState[];
  states: ReadonlyMap<string, AlertState>;
}

const STOP_GRACE_MS = 5_000;
/** After a failed write of the group_wait queue (database locked or full), try again this much later. */
const GROUP_RETRY_MS = 5_000;

/** Opens the store the configuration names (SQLite or PostgreSQL), then creates the app on it: what `boxwatch run` does. */
export async function openApp(deps: Omit<AppDeps, 'store'>): Promise<App> {
  const { config, logger } = deps;
  // Replicas: a frozen replica's open transaction is ended, and its locks released, before its lease expires.
  const idleInTransactionTimeoutMs = config.cluster === undefined ? undefined : Math.floor(config.cluster.lease / 2);
  const store = await openDataStore(config.storage, { clock: deps.clock, logger, maxGapMs: maxGapMsOf(config), rawRetentionMs: config.storage.rawRetention, idleInTransactionTimeoutMs });
  return createApp({ ...deps, store });
}

/** The app on `deps.store`; without one (tests), on the SQLite file at config.storage.path. */
export function createApp(deps: AppDeps & { store?: undefined }): App<SqliteStore>;
export function createApp<S extends DataStore>(deps: AppDeps<S> & { store: S }): App<S>;
export function createApp(deps: AppDeps): App {
  const { config, logger } = deps;
  const clock = deps.clock ?? systemClock;
  const scheduleClock = deps.scheduleClock ?? clock;
  const metrics = createMetrics({ clock });
  // One gateway client, schedule and cycle per account (docs/configuration.md, "Several accounts").
  const accounts = config.gateways.map((account, i): AccountRun => {
    const counter = { requests: 0 };
    const client =
      i === 0 && deps.client !== undefined
        ? deps.client
        : createGatewayClient({
            baseUrl: account.baseUrl,
            secretKey: account.secretKey,
            timeoutMs: account.timeout,
            maxBodyBytes: camelEndpoints(account.maxBody),
            connections: Math.max(account.concurrency, 2),
            clock,
            onRequest: (e) => {
              counter.requests += 1;
              metrics.observeRequest(e);
            },
          });
    const tickMs = scheduleIntervalMs(account.schedule, config.poll.timezone);
    const accountLogger = config.gateways.length > 1 ? logger.child({ account: account.name }) : logger;
    return {
      config: account,
      client,
      requestCount: () => counter.requests,
      tickIntervalMs: tickMs,
      // A cycle ends before the next tick is due (what is not back by then waits for the next
      // cycle), but never before one request could have run to its timeout.
      cycleDeadlineMs: Math.max(Math.floor(tickMs * 0.9), account.timeout),
      skewMs: null,
      heartbeat: createHeartbeat(accountLogger),
      logger: accountLogger,
      quarantine: new RecordQuarantine(accountLogger),
      awaited: null,
    };
  });
  const first = accounts[0] as AccountRun;
  const byAccount = new Map(accounts.map((a) => [a.config.name, a]));
  /**
   * The client calls, test calls and the archive use for an account's calls: its own; undefined
   * for an account not configured, or (replicas) not led by this process now.
   */
  const clientOf = (account: string): GatewayClient | undefined => (leadership.holds(account) ? byAccount.get(account)?.client : undefined);
  const tickIntervalMs = Math.max(...accounts.map((a) => a.tickIntervalMs));
  const store: DataStore = deps.store ?? defaultStore(config, clock, logger);
  const hold = deps.hold ?? store.hold;
  const alerts = store.alerts;
  const outbox = store.outbox(looksLikeNotificationMessage);
  const groupQueue = store.groupQueue();
  const configured = new Set(config.notifiers.map((n) => n.name));
  // Replicas (`cluster:`): this process works only for the accounts it leads (src/cluster/).
  const replica: Replica | null = config.cluster
    ? createReplica({
        config: config.cluster,
        repo: store.leases,
        accounts: () => accounts.map((a) => a.config.name),
        clock,
        logger,
        metrics,
        archive: () => archive?.id() ?? null,
        work: {
          start: (account) => {
            // What this process knew of the account's calls is from before: another replica may have worked it since.
            callIngests.get(account)?.forget();
            dispatcher.wake();
            void group();
          },
          stop: async (account): Promise<void> => {
            callIngests.get(account)?.forget();
            await Promise.all([cycling.get(account), dispatcher.idle()]);
          },
        },
      })
    : null;
  const leadership = leadershipOf(replica);
  const judge = archiveJudge(config.rules, accounts.map((a) => a.config.name), (name) => leadership.holds(name));
  /** The fleet's counts for templates (`fleet.*`), as of the last cycle (read at start, then kept by each cycle). */
  let fleet: FleetStats | undefined;
  const pipeline = new AlertPipeline({
    config,
    callFacts: callAndArchiveFacts({ calls: (account) => callIngests.get(account)?.facts() ?? null, archive: () => archive?.facts() ?? null, judge }),
    // Judged with the call facts: only after a successful call sync of the account are its test calls' ends known.
    testCallVerdicts: (account) => (testCalls !== null && callIngests.get(account)?.facts() ? testCalls.verdicts(clock.now()) : null),
  });
  const notifiers =
    deps.notifiers ??
    notifiersFromConfig(config.notifiers, {
      stdout: deps.stdout,
      now: () => clock.now(),
      onTemplateFailure: logTemplateFailure(logger),
      externalUrl: config.http.externalUrl,
      fleet: () => fleet,
    });
  /** Aborted by stop() once the grace period is over: the requests in flight are abandoned. */
  const controller = new AbortController();
  setMaxListeners(0, controller.signal); // one listener per notification, archive request or sleep in flight
  const dispatcher = new Dispatcher({
    notifiers,
    queue: outbox,
    clock,
    logger,
    policy: {
      baseMs: config.alerting.delivery.initialBackoff,
      maxMs: config.alerting.delivery.maxBackoff,
      maxAgeMs: config.alerting.delivery.maxAge,
    },
    onOutcome: (o) => metrics.observeNotification(o.notifier, o.result),
    ...(replica && { fences: () => replica.fences(), onLeaseLost: (f: Fence) => replica.lost(f) }),
    signal: controller.signal,
  });
  // /metrics and the heavy API answers are rendered once per cycle from this snapshot.
  const snapshot = fleetSnapshot(store, (account) => alerts.states(account), config.gateways.map((a) => a.name));
  metrics.setBoxesProvider(() => snapshot.boxes());
  metrics.setAlertsProvider(async () => firingCounts((await snapshot.states()).values()));
  metrics.setOutboxProvider(async () => (await outbox.stats()).map((s) => ({ notifier: s.notifier, depth: s.pending })));
  store.damagedRows.report(logger, (table) => metrics.damagedRow(table));
  // Receivers that forget alerts they do not hear of again (Alertmanager) get the firing ones resent.
  const resender = new Resender({
    notifiers,
    clock,
    logger,
    signal: controller.signal,
    firing: async (name, now) => {
      const route = config.notifiers.find((n) => n.name === name) ?? {};
      // The boxes by serial from the snapshot, built once per change of the fleet (not a read of it per resend).
      const boxes = await snapshot.memo('resender: boxes by serial', (list) => new Map(list.map((b) => [b.serial, b])));
      const items = announcedFiringItems((await alerts.states()).values(), route, (serial) => boxes.get(serial), now);
      // Replicas: each resends the alerts of the accounts it leads, so each alert once.
      return replica === null ? items : items.filter((item) => replica.holds(accountOf(item.serial)));
    },
  });
  let http: RunningHttpServer | null = null;
  /** The dashboard's live event stream: one event after every cycle. */
  const events = createLiveEvents();
  /** The version of the fleet snapshot last announced on it. */
  let announcedVersion = 0;
  const announce = (c: { startedAt: number; outcome: 'ok' | 'failed'; boxes: number }, version: number): void => {
    announcedVersion = version;
    events.publish({ startedAt: isoTime(c.startedAt), outcome: c.outcome, boxes: c.boxes });
  };
  /**
   * Replicas: at each tick of an account another replica leads, a change of the fleet stored by
   * the others since the last announcement (a cycle of any account, whatever its start) is
   * announced too, so that this replica's open pages (a standby's among them) stay live.
   */
  const announceOthers = async (): Promise<void> => {
    try {
      const version = await snapshot.version();
      if (version === announcedVersion) return;
      const last = await store.lastCycle();
      if (last !== undefined) announce(last, version);
    } catch {
      // the database is out of reach: the pages catch up with the next cycle
    }
  };
  /** The gateway clock's skew of the first account (calls and the dashboard read it). */
  const skew = (): number | null => first.skewMs;
  let groupTimer: NodeJS.Timeout | undefined;
  let lockTimer: NodeJS.Timeout | undefined;
  let running = false;
  let stopping: Promise<void> | null = null;
  /** Moves groups whose group_wait has passed into the outbox and wakes the dispatcher. */
  const group = async (): Promise<void> => {
    clearTimeout(groupTimer);
    let next: number | null;
    try {
      next = null;
      // Replicas: the items of each led account, its release fenced.
      for (const fence of replica === null ? [undefined] : replica.fences()) {
        const { released, nextReadyAt } = await releaseReadyGroups(groupQueue, clock.now(), config.alerting.groupWait, configured, fence).catch((err: unknown) => {
          if (fence === undefined || !isLeaseLost(err)) throw err;
          replica?.lost(fence);
          return { released: [], nextReadyAt: null };
        });
        if (released.length > 0) dispatcher.wake();
        if (nextReadyAt !== null) next = next === null ? nextReadyAt : Math.min(next, nextReadyAt);
      }
    } catch (err) {
      // The database is locked or full: nothing was moved (one transaction); try again later.
      logger.error({ code: storeFailureCode(err), err: errorMessage(err) }, 'cannot move grouped alerts to the outbox; will retry');
      next = clock.now() + GROUP_RETRY_MS;
    }
    if (running && next !== null) {
      groupTimer = setTimeout(() => void group(), timerDelay(next - clock.now() + 5));
      groupTimer.unref();
    }
  };

  /** Per account, its cycle in flight (a lease given up waits for it). */
  const cycling = new Map<string, Promise<void>>();
  const cycle = (run: AccountRun): Promise<void> => {
    // Replicas: an account is polled only by the replica that leads it, its write fenced.
    const name = run.config.name;
    const fence = replica?.fence(name);
    if (replica !== null && fence === undefined) return announceOthers();
    const p = cycleWith(run, fence).catch((err: unknown) => {
      if (fence === undefined || !isLeaseLost(err)) throw err;
      logger.error({ account: name }, 'poll cycle not stored: another replica leads this account now');
      replica?.lost(fence);
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
        policy: { detailsEveryMs: config.poll.detailsEvery, tickIntervalMs: run.tickIntervalMs },
        deadlineMs: run.cycleDeadlineMs,
        quarantine: run.quarantine,
        requestCount: run.requestCount,
        signal: controller.signal,
        commit: async (write) => {
          const now = clock.now();
          // last_seen is stored on our clock already (the poller corrects the gateway's skew).
          let boxes: BoxState[] = [];
          // The cycle reads only its part of the fleet (its account's boxes and alerts).
          const { recorded, result } = await store.commitCycle(write, now, (view) => {
            boxes = view.boxes; // the cycle's part of the fleet as it left it: the snapshot below
            return pipeline.decide(write.cycle, view, now, null);
          }, fence, pipeline.scope(account.name));
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
      if (controller.signal.aborted) {
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
    const done: AppCycle = { ...result, alerts: cycleAlerts };
    if (run.awaited !== null) run.awaited.result = done;
    metrics.observeCycle(result.cycle);
    housekeeping.checkWal();
    if (committed !== null) snapshot.publish(committed.startedAt, committed.accounts, committed.boxes, committed.states);
    // The whole fleet's alerts and boxes from the snapshot, brought up to date once (one read of
    // the latest cycles): the other accounts' parts are read again only when another process stored a cycle of them.
    const view = await snapshot.view();
    run.heartbeat.afterCycle(result.cycle, firingCounts(view.states.values()).reduce((n, c) => n + c.count, 0));
    if (committed !== null) fleet = fleetStats(view.boxes, view.states.values());
    if (http !== null) await metrics.prepare(view.boxes);
    if (result.serverTime !== null) run.skewMs = gatewaySkew(result.serverTime, result.cycle.startedAt);
    announce(result.cycle, view.version);
    if (cycleAlerts !== null && cycleAlerts.queued > 0) void group();
    deps.onCycle?.(done);
    housekeeping.pruneWhenDue();
  };

  const onSkip = (): void => metrics.tickSkipped();
  const onCrash = (): void => metrics.cycleCrashed();
  // One scheduler per account (same order as `accounts`); they tick only when called (tests) until start().
  let schedulers: Scheduler[] = accounts.map((run) => startScheduler({ task: () => cycle(run), logger, clock: scheduleClock, onSkip, onCrash }));

  // Call ingestion: one call sync per account, each with its own gateway client, schedule tick and
  // transaction (src/calls/); its calls are stored under the account's box ids and call keys.
  const callIngests = createCallIngests({
    config: config.calls,
    rules: config.rules,
    repo: store.calls,
    accounts: accounts.map((run) => ({ name: run.config.name, client: run.client, secretKey: run.config.secretKey, concurrency: run.config.concurrency, logger: run.logger, skewMs: () => run.skewMs })),
    timezone: config.poll.timezone,
    clock,
    wantRecordings: config.archive !== undefined,
  });
  const calls = callIngests.get(first.config.name) ?? null;
  const callMetrics = calls ? registerCallMetrics(metrics.registry) : null;
  // The recording archive: a pass after every call sync, not awaited by it (src/archive/).
  const archive =
    config.archive && config.calls
      ? createArchiver({
          config: config.archive,
          privacy: config.calls,
          rules: config.rules,
          repo: store.recordings,
          clientOf,
          clock,
          logger,
          timeoutMs: Math.max(...accounts.map((a) => a.config.timeout)),
          metrics: registerArchiveMetrics(metrics.registry),
          signal: controller.signal,
          ...(replica && { replicaArchives: () => replica.otherArchives() }),
          ...(deps.archiveFs && { fs: deps.archiveFs }),
        })
      : null;
  const testCalls =
    calls && config.testCalls
      ? createTestCalls({ entries: config.testCalls, repo: store.testCalls, boxes: () => store.boxes(), clientOf, clock, logger, concurrency: first.config.concurrency })
      : null;
  const callSchedules = createCallSchedules({
    accounts: accounts.map((run) => ({ name: run.config.name, logger: run.logger })),
    ingests: callIngests,
    schedule: config.calls?.schedule,
    timezone: config.poll.timezone,
    clock: scheduleClock,
    holds: (name) => leadership.holds(name),
    observers: [callMetrics && ((account, result) => callMetrics.observeSync(account, result)), refreshTestCalls(testCalls), archiveAfterSync(archive)],
    signal: controller.signal,
  });
  const housekeeping = createHousekeeping({
    store,
    calls: calls?.repo ?? null,
    testCalls: testCalls && store.testCalls,
    retention: { rawMs: config.storage.rawRetention, rollupMs: config.storage.rollupRetention },
    dbPath: sqlitePathOf(config.storage),
    clock,
    logger,
    signal: controller.signal,
  });
  const testCallSchedules = createTestCallSchedules({ testCalls, entries: config.testCalls ?? [], timezone: config.poll.timezone, clock: scheduleClock, logger, signal: controller.signal });

  return {
    store,
    alerts,
    outbox,
    metrics,
    replica,
    get httpUrl() {
      return http?.url ?? null;
    },
    async start() {
      if (replica === null) {
        const { tookOver } = await hold.take();
        if (tookOver !== null) logger.warn({ db: store.name, previous: tookOver }, `took the database over from a daemon that is gone (pid ${tookOver.pid} on ${tookOver.host})`);
        lockTimer = setInterval(() => void beatLock(), DAEMON_HEARTBEAT_MS);
        lockTimer.unref();
      } else {
        // Its archive directory's id, announced with its heartbeats even while it leads no account
        // (a standby runs no archive pass): another replica's archive.dir not shared is seen at once.
        void archive?.identify();
        replica.start(); // no hold on the database: the accounts are leased (docs/operations.md)
      }
      running = true;
      fleet = fleetStats(await store.boxes(), (await alerts.states()).values());
      if (config.http.enabled) {
        http = await startHttpServer({
          listen: config.http.listen,
          store,
          snapshot,
          metrics,
          clock,
          logger,
          alerts: apiReader(alertViewSource(store, alerts, store.acks), config, clock),
          dashboard: { alerts, acks: store.acks, config, events, skewMs: skew, leases: store.leases, ...(replica && { replica: () => replica.health() }) },
          ...(calls && { calls: { repo: calls.repo, now: () => clock.now() + (skew() ?? 0) } }),
          limits: { maxConnections: config.http.maxConnections },
          // healthy while the last good cycle is younger than three schedule intervals plus a timeout
          health: { maxCycleAgeMs: (3 * tickIntervalMs + Math.max(...accounts.map((a) => a.config.timeout))) * (deps.clockRate ?? 1), accounts: config.gateways.map((a) => a.name), ...(replica && { replica: () => replica.health() }) },
        });
        logger.info({ url: http.url, dashboard: `${http.url}${config.http.basePath}` }, 'http endpoints listening');
      }
      for (const s of schedulers) void s.stop();
      schedulers = accounts.map((run) => startScheduler({ schedule: run.config.schedule, timezone: config.poll.timezone, task: () => cycle(run), logger, clock: scheduleClock, onSkip, onCrash }));
      await group(); // anything left queued by a previous run (and items of removed notifiers)
      await dispatcher.retireRemoved();
      callSchedules.start();
      testCallSchedules.start();
      dispatcher.start();
      resender.start();
      if (accounts.length === 1) logger.info({ schedule: first.config.schedule, gateway: redactUrl(first.config.baseUrl), db: store.name }, 'boxwatch polling');
      else logger.info({ accounts: accounts.map((a) => ({ account: a.config.name, schedule: a.config.schedule, gateway: redactUrl(a.config.baseUrl) })), db: store.name }, `boxwatch polling ${accounts.length} accounts`);
    },
    async runOnce(account) {
      let result: AppCycle | undefined;
      for (const [i, run] of accounts.entries()) {
        if (account !== undefined && run.config.name !== account) continue;
        // A runOnce already waiting on this account keeps its slot (this call's tick is then skipped).
        const mine = run.awaited === null;
        const waiting: CycleWaiter = run.awaited ?? {};
        run.awaited = waiting;
        try {
          await (schedulers[i] as Scheduler).tick();
        } finally {
          if (mine) run.awaited = null;
        }
        result = waiting.result;
      }
      return result;
    },
    calls,
    runCallsOnce: (account) => callSchedules.runOnce(account),
    archive,
    async runArchiveOnce() {
      return archive?.pass();
    },
    testCalls,
    runTestCallsOnce: (entry) => testCallSchedules.runOnce(entry),
    async deliverNow() {
      await group();
      await dispatcher.runAllOnce();
    },
    get skippedTicks() {
      return schedulers.reduce((n, s) => n + s.skipped, 0);
    },
    stop() {
      stopping ??= stopOnce();
      return stopping;
    },
  };

  /** The hold's heartbeat: a busy database only delays it; a hold taken over by another daemon stops this app. */
  async function beatLock(): Promise<void> {
    try {
      await hold.beat();
    } catch (err) {
      if (!(err instanceof StoreError && err.code === 'store_in_use')) {
        logger.warn({ code: storeFailureCode(err), err: errorMessage(err) }, 'could not refresh the database hold; trying again at the next heartbeat');
        return;
      }
      clearInterval(lockTimer);
      logger.error({ code: err.code, db: store.name }, err.message);
      void (stopping ??= stopOnce()).finally(() => deps.onLockLost?.(err));
    }
  }

  async function stopOnce(): Promise<void> {
    running = false;
    clearTimeout(groupTimer);
    clearInterval(lockTimer);
    // The cycle and the delivery in flight may finish within the grace period; then their
    // requests are aborted (a gateway that never answers must not hold up a shutdown).
    const abandon = setTimeout(() => {
      logger.warn({ graceMs: deps.stopGraceMs ?? STOP_GRACE_MS }, 'stopping: abandoning the requests still in flight');
      controller.abort(new Error('boxwatch is stopping'));
    }, deps.stopGraceMs ?? STOP_GRACE_MS);
    try {
      await Promise.all([...schedulers.map((s) => s.stop()), callSchedules.stop(), testCallSchedules.stop(), dispatcher.stop(), resender.stop()]);
    } finally {
      clearTimeout(abandon);
    }
    await replica?.stop(); // after the work stopped: the leases are released for the others at once
    await http?.close();
    controller.abort();
    await housekeeping.idle(); // the prune in flight stops at its next batch
    await archive?.close();
    await Promise.all(accounts.map((a) => a.client.close()));
    await Promise.all(notifiers.map((n) => n.close?.()));
    try {
      await hold.release();
    } catch (err) {
      logger.warn({ code: storeFailureCode(err), err: errorMessage(err) }, 'could not give the database hold up; another daemon takes it over once its heartbeat is old');
    }
    await store.close();
  }
}

/** Polls further apart than this leave a gap in the history (no data) rather than "unchanged". */
function maxGapMsOf(config: Config): number {
  return Math.max(5 * 60_000, 3 * Math.max(...config.gateways.map((a) => scheduleIntervalMs(a.schedule, config.poll.timezone))));
}

/** The store of an app created without one (tests): the SQLite file at storage.path. */
function defaultStore(config: Config, clock: Clock, logger: Logger): SqliteStore {
  if (config.storage.url !== undefined) throw new Error('createApp: a PostgreSQL store (storage.url) is opened by openApp');
  return openSqliteFile(config.storage.path ?? ':memory:', { clock, logger, maxGapMs: maxGapMsOf(config), rawRetentionMs: config.storage.rawRetention });
}

/** The fleet as templates see it (`fleet.*`). */
function fleetStats(boxes: readonly BoxState[], states: Iterable<AlertState>): FleetStats {
  let present = 0;
  let connected = 0;
  for (const b of boxes) {
    if (b.missingSince !== null) continue;
    present += 1;
    if (b.connected === true) connected += 1;
  }
  let firingAlerts = 0;
  for (const s of states) if (s.status === 'firing') firingAlerts += 1;
  return { boxes: present, connected, disconnected: present - connected, firingAlerts };
}

/** Firing alerts counted by rule and severity (the boxwatch_alerts_firing gauge). */
function firingCounts(states: Iterable<AlertState>): { rule: string; severity: string; count: number }[] {
  const counts = new Map<string, { rule: string; severity: string; count: number }>();
  for (const s of states) {
    if (s.status !== 'firing') continue;
    const key = `${s.rule}\u0000${s.severity}`;
    const c = counts.get(key) ?? { rule: s.rule, severity: s.severity, count: 0 };
    c.count += 1;
    counts.set(key, c);
  }
  return [...counts.values()];
}

/** `gateway.max_body` (camelCase keys after config parsing) as the client's per-endpoint limits. */
function camelEndpoints(maxBody: Config['gateway']['maxBody']): Record<Endpoint, number> {
  return {
    device_list: maxBody.deviceList,
    device_details: maxBody.deviceDetails,
    call_list: maxBody.callList,
    call_details: maxBody.callDetails,
    make_call: maxBody.makeCall,
  };
}
