/**
 * The composition root: builds each stage from a Config and wires them; every decision is in a
 * stage's module (docs/architecture.md, "Who owns what"). `start()` starts the schedules, `stop()`
 * lets the work in flight finish and closes the store; tests drive `runOnce()` and `deliverNow()`.
 */
import { setMaxListeners } from 'node:events';
import type { App, AppDeps } from './app-types.js';
import { archiveJudge, callAndArchiveFacts } from './archive/judge.js';
import { archiveAfterSync, archiveOf } from './archive/schedule.js';
import { AlertPipeline } from './alerts/pipeline.js';
import { registerCallMetrics } from './calls/metrics.js';
import { createCallIngests, createCallSchedules } from './calls/schedule.js';
import { createTestCallSchedules, refreshTestCalls, testCallsOf, testCallVerdictsOf } from './calls/test-call-schedule.js';
import { systemClock } from './clock.js';
import { leadershipOf } from './cluster/leadership.js';
import { replicaOf, type Replica } from './cluster/replica.js';
import { createTenure, idleInTransactionTimeoutOf } from './cluster/tenure.js';
import { feedMetrics, startDaemonHttp } from './http/daemon.js';
import { fleetSnapshot, type RunningHttpServer } from './http/index.js';
import { createMetrics } from './metrics.js';
import { Dispatcher } from './notify/dispatcher.js';
import { FleetCounts } from './notify/fleet.js';
import { notifiersFromConfig } from './notify/from-config.js';
import { createGrouping } from './notify/grouping.js';
import { looksLikeNotificationMessage } from './domain/outbox.js';
import { Resender } from './notify/resend.js';
import { firingToResend } from './notify/resend-firing.js';
import { logTemplateFailure } from './notify/templates.js';
import { createAccountLoop, logPolling } from './poller/account-loop.js';
import { clientsOf, createAccountRuns, maxGapMsOf } from './poller/accounts.js';
import { beatHeart, groupWhenQueued, liveAnnouncer, loopFleet, prepareMetrics, recordCycle } from './poller/observers.js';
import { createHousekeeping, sqlitePathOf } from './store/housekeeping.js';
import { DAEMON_HEARTBEAT_MS, openDataStore, openSqliteOf, type DataStore, type SqliteStore } from './store/index.js';
import { createLiveEvents } from './web/live.js';

export type { App, AppCycle, AppDeps } from './app-types.js';

const STOP_GRACE_MS = 5_000;

/** Opens the store the configuration names (SQLite or PostgreSQL), then creates the app on it: what `boxwatch run` does. */
export async function openApp(deps: Omit<AppDeps, 'store'>): Promise<App> {
  const { config, logger } = deps;
  const store = await openDataStore(config.storage, { clock: deps.clock, logger, maxGapMs: maxGapMsOf(config), rawRetentionMs: config.storage.rawRetention, idleInTransactionTimeoutMs: idleInTransactionTimeoutOf(config.cluster) });
  return createApp({ ...deps, store });
}

/** The app on `deps.store`; without one (tests), on the SQLite file at config.storage.path. */
export function createApp(deps: AppDeps & { store?: undefined }): App<SqliteStore>;
export function createApp<S extends DataStore>(deps: AppDeps<S> & { store: S }): App<S>;
export function createApp(deps: AppDeps): App {
  const { config, logger } = deps;
  const clock = deps.clock ?? systemClock;
  const scheduleClock = deps.scheduleClock ?? clock;
  const timezone = config.poll.timezone;
  const metrics = createMetrics({ clock });
  const accounts = createAccountRuns({ gateways: config.gateways, timezone, client: deps.client, clock, logger, onRequest: (e) => metrics.observeRequest(e) });
  const names = accounts.map((a) => a.config.name);
  const store: DataStore = deps.store ?? openSqliteOf(config.storage, { clock, logger, maxGapMs: maxGapMsOf(config), rawRetentionMs: config.storage.rawRetention });
  const alerts = store.alerts;
  const outbox = store.outbox(looksLikeNotificationMessage);
  const controller = new AbortController(); // aborted by stop() once the grace period is over: the requests in flight are abandoned
  const signal = controller.signal;
  setMaxListeners(0, signal); // one listener per notification, archive request or sleep in flight
  const replica: Replica | null = replicaOf(config.cluster, {
    repo: store.leases, accounts: () => names, clock, logger, metrics, archive: () => archive?.id() ?? null,
    work: {
      // What this process knew of the account's calls is from before: another replica may have worked it since.
      start: (account) => {
        callIngests.get(account)?.forget();
        dispatcher.wake();
        void grouping.run();
      },
      stop: async (account) => {
        callIngests.get(account)?.forget();
        await Promise.all([loop.inFlight(account), dispatcher.idle()]);
      },
    },
  });
  const leadership = leadershipOf(replica);
  const holds = (account: string): boolean => leadership.holds(account);
  const clientOf = clientsOf(accounts, holds);
  const callIngests = createCallIngests({ config: config.calls, rules: config.rules, repo: store.calls, timezone, clock, wantRecordings: config.archive !== undefined, accounts: accounts.map((run) => ({ name: run.config.name, client: run.client, secretKey: run.config.secretKey, concurrency: run.config.concurrency, logger: run.logger, skewMs: () => run.skewMs })) });
  const callFacts = (account: string) => callIngests.get(account)?.facts() ?? null;
  const calls = callIngests.get(names[0] as string) ?? null;
  const callMetrics = calls && registerCallMetrics(metrics.registry);
  const archive = archiveOf(config, {
    rules: config.rules, repo: store.recordings, clientOf, clock, logger, signal, timeoutMs: Math.max(...accounts.map((a) => a.config.timeout)), registry: metrics.registry,
    ...(replica && { replicaArchives: () => replica.otherArchives() }),
    ...(deps.archiveFs && { fs: deps.archiveFs }),
  });
  const testCalls = testCallsOf(config.testCalls, calls, { repo: store.testCalls, boxes: () => store.boxes(), clientOf, clock, logger, concurrency: accounts[0]?.config.concurrency ?? 1 });
  const pipeline = new AlertPipeline({
    config,
    callFacts: callAndArchiveFacts({ calls: callFacts, archive: () => archive?.facts() ?? null, judge: archiveJudge(config.rules, names, holds) }),
    testCallVerdicts: testCallVerdictsOf(testCalls, callFacts, () => clock.now()),
  });
  const fleet = new FleetCounts();
  const notifiers = deps.notifiers ?? notifiersFromConfig(config.notifiers, { stdout: deps.stdout, now: () => clock.now(), onTemplateFailure: logTemplateFailure(logger), externalUrl: config.http.externalUrl, fleet: () => fleet.current() });
  const { initialBackoff: baseMs, maxBackoff: maxMs, maxAge: maxAgeMs } = config.alerting.delivery;
  const dispatcher = new Dispatcher({
    notifiers, queue: outbox, clock, logger, signal, policy: { baseMs, maxMs, maxAgeMs },
    onOutcome: (o) => metrics.observeNotification(o.notifier, o.result),
    leadership,
  });
  const grouping = createGrouping({ queue: store.groupQueue(), groupWaitMs: config.alerting.groupWait, configured: new Set(config.notifiers.map((n) => n.name)), leadership, wake: () => dispatcher.wake(), clock, logger });
  // /metrics and the heavy API answers are rendered once per cycle from this snapshot.
  const snapshot = fleetSnapshot(store, (account) => alerts.states(account), names);
  feedMetrics(metrics, snapshot, outbox);
  store.damagedRows.report(logger, (table) => metrics.damagedRow(table));
  // Receivers that forget alerts they do not hear of again (Alertmanager) get the firing ones resent.
  const resender = new Resender({ notifiers, clock, logger, signal, firing: firingToResend({ routes: config.notifiers, snapshot, states: () => alerts.states(), holds }) });
  let http: RunningHttpServer | null = null;
  const events = createLiveEvents();
  const live = liveAnnouncer({ events, version: () => snapshot.version(), lastCycle: () => store.lastCycle() });
  const testCallSchedules = createTestCallSchedules({ testCalls, entries: config.testCalls ?? [], timezone, clock: scheduleClock, logger, signal });
  const callSchedules = createCallSchedules({
    accounts: accounts.map((run) => ({ name: run.config.name, logger: run.logger })), ingests: callIngests, schedule: config.calls?.schedule, timezone, clock: scheduleClock, holds, signal,
    observers: [callMetrics && ((account, result) => callMetrics.observeSync(account, result)), refreshTestCalls(testCalls), archiveAfterSync(archive)],
  });
  const housekeeping = createHousekeeping({ store, calls: calls?.repo ?? null, testCalls: testCalls && store.testCalls, retention: { rawMs: config.storage.rawRetention, rollupMs: config.storage.rollupRetention }, dbPath: sqlitePathOf(config.storage), clock, logger, signal });
  const loop = createAccountLoop({
    accounts, store, pipeline, detailsEveryMs: config.poll.detailsEvery, timezone, clock, scheduleClock, logger, metrics, leadership, signal,
    notLed: () => live.others(),
    fleet: loopFleet(snapshot),
    // In this order after every stored cycle.
    observers: [
      recordCycle(metrics),
      () => housekeeping.checkWal(),
      beatHeart,
      fleet.afterCycle,
      prepareMetrics(metrics, () => http !== null),
      live.afterCycle,
      groupWhenQueued(() => grouping.run()),
      (s) => deps.onCycle?.(s.cycle),
      () => housekeeping.pruneWhenDue(),
    ],
  });
  const tenure = createTenure({ replica, hold: deps.hold ?? store.hold, beatEveryMs: DAEMON_HEARTBEAT_MS, db: store.name, logger, identifyArchive: () => void archive?.identify(), onLost: (err) => void app.stop().finally(() => deps.onLockLost?.(err)) });
  let stopping: Promise<void> | null = null;

  const app: App = {
    store, alerts, outbox, metrics, replica, calls, archive, testCalls,
    get httpUrl() {
      return http?.url ?? null;
    },
    async start() {
      await tenure.begin();
      grouping.start();
      fleet.set(await store.boxes(), (await alerts.states()).values());
      const skew = (): number | null => accounts[0]?.skewMs ?? null;
      http = await startDaemonHttp({ config, store, snapshot, metrics, events, skew, replica, calls: calls?.repo ?? null, accounts, clockRate: deps.clockRate ?? 1, clock, logger });
      loop.start();
      await grouping.run(); // anything left queued by a previous run (and items of removed notifiers)
      await dispatcher.retireRemoved();
      callSchedules.start();
      testCallSchedules.start();
      dispatcher.start();
      resender.start();
      logPolling(logger, accounts, store.name);
    },
    runOnce: (account) => loop.runOnce(account),
    runCallsOnce: (account) => callSchedules.runOnce(account),
    runArchiveOnce: async () => archive?.pass(),
    runTestCallsOnce: (entry) => testCallSchedules.runOnce(entry),
    async deliverNow() {
      await grouping.run();
      await dispatcher.runAllOnce();
    },
    get skippedTicks() {
      return loop.skippedTicks;
    },
    stop: () => (stopping ??= stopOnce()),
  };
  return app;

  async function stopOnce(): Promise<void> {
    grouping.stop();
    tenure.halt();
    // The work in flight may finish within the grace period, then its requests are aborted: a gateway that never answers must not hold up a shutdown.
    const graceMs = deps.stopGraceMs ?? STOP_GRACE_MS;
    const abandon = setTimeout(() => {
      logger.warn({ graceMs }, 'stopping: abandoning the requests still in flight');
      controller.abort(new Error('boxwatch is stopping'));
    }, graceMs);
    await Promise.all([loop.stop(), callSchedules.stop(), testCallSchedules.stop(), dispatcher.stop(), resender.stop()]).finally(() => clearTimeout(abandon));
    await tenure.leave(); // after the work stopped: the leases are released for the others at once
    await http?.close();
    controller.abort();
    await housekeeping.idle(); // the prune in flight stops at its next batch
    await archive?.close();
    await Promise.all(accounts.map((a) => a.client.close()));
    await Promise.all(notifiers.map((n) => n.close?.()));
    await tenure.release();
    await store.close();
  }
}
