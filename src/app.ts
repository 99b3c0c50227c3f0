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
import { mkdirSync } from 'node:fs';
import { setMaxListeners } from 'node:events';
import { dirname } from 'node:path';
import { AlertPipeline, type CycleAlerts } from './alerts/pipeline.js';
import type { Clock } from './clock.js';
import { systemClock } from './clock.js';
import type { Config } from './config/index.js';
import { createGatewayClient } from './gateway/client.js';
import type { GatewayClient } from './gateway/types.js';
import type { Logger } from './log.js';
import type { LineSink } from './notify/console.js';
import { Dispatcher } from './notify/dispatcher.js';
import { notifiersFromConfig } from './notify/from-config.js';
import type { Notifier } from './notify/types.js';
import { runCycle, type CycleResult } from './poller/cycle.js';
import { scheduleIntervalMs, startScheduler, type Scheduler } from './poller/scheduler.js';
import { AlertStore } from './store/alert-store.js';
import { openStore, type SqliteStore } from './store/index.js';
import { startHttpServer, type AlertsReader, type RunningHttpServer } from './http/index.js';
import { createMetrics, type Metrics } from './metrics.js';

export interface AppDeps {
  config: Config;
  logger: Logger;
  clock?: Clock;
  /** Injected in tests; by default built from config.gateway. */
  client?: GatewayClient;
  /** Injected in tests; by default opened at config.storage.path. */
  store?: SqliteStore;
  /** Injected in tests; by default built from config.notifiers. */
  notifiers?: Notifier[];
  /** Where the console notifier writes (default stdout). */
  stdout?: LineSink;
  /** Called after every cycle (the demo prints from it). */
  onCycle?: (result: AppCycle) => void;
}

export interface AppCycle extends CycleResult {
  alerts: CycleAlerts | null;
}

export interface App {
  readonly store: SqliteStore;
  readonly alerts: AlertStore;
  readonly metrics: Metrics;
  /** The HTTP server's address once started (null when `http: false`). */
  readonly httpUrl: string | null;
  /** Starts the schedule, the grouper, the dispatcher and the HTTP server. */
  start(): Promise<void>;
  /** One poll cycle now (no-overlap rules apply); undefined when the tick was skipped. */
  runOnce(): Promise<AppCycle | undefined>;
  /** Groups what is ready and runs one delivery pass for every notifier (tests, demo). */
  deliverNow(): Promise<void>;
  readonly skippedTicks: number;
  /** Stops the schedule, waits for the cycle and the delivery in flight, closes client and store. */
  stop(): Promise<void>;
}

const PRUNE_EVERY_MS = 10 * 60_000;

export function createApp(deps: AppDeps): App {
  const { config, logger } = deps;
  const clock = deps.clock ?? systemClock;
  const metrics = createMetrics({ clock });
  let requests = 0;
  const client =
    deps.client ??
    createGatewayClient({
      baseUrl: config.gateway.baseUrl,
      secretKey: config.gateway.secretKey,
      timeoutMs: config.gateway.timeout,
      connections: Math.max(config.gateway.concurrency, 2),
      clock,
      onRequest: (e) => {
        requests += 1;
        metrics.observeRequest(e);
      },
    });
  const tickIntervalMs = scheduleIntervalMs(config.poll.schedule);
  // Polls further apart than this leave a gap in the history (no data) rather than "unchanged".
  const maxGapMs = Math.max(5 * 60_000, 3 * tickIntervalMs);
  const store = deps.store ?? openFileStore(config.storage.path, clock, logger, maxGapMs);
  const alerts = new AlertStore(store.db);
  const pipeline = new AlertPipeline({ config, alerts });
  const notifiers = deps.notifiers ?? notifiersFromConfig(config.notifiers, { stdout: deps.stdout });
  const dispatcher = new Dispatcher({
    notifiers,
    queue: alerts,
    clock,
    logger,
    policy: {
      baseMs: config.alerting.delivery.initialBackoff,
      maxMs: config.alerting.delivery.maxBackoff,
      maxAgeMs: config.alerting.delivery.maxAge,
    },
    onOutcome: (o) => metrics.observeNotification(o.notifier, o.result),
  });
  metrics.setBoxesProvider(() => store.boxes());
  metrics.setAlertsProvider(() => firingCounts(alerts));
  metrics.setOutboxProvider(() => alerts.outboxStats().map((s) => ({ notifier: s.notifier, depth: s.pending })));
  let http: RunningHttpServer | null = null;
  const controller = new AbortController();
  setMaxListeners(0, controller.signal); // one listener per request in flight
  let lastPrune = 0;
  let last: AppCycle | undefined;
  let groupTimer: NodeJS.Timeout | undefined;
  let running = false;

  /** Moves groups whose group_wait has passed into the outbox and wakes the dispatcher. */
  const group = (): void => {
    clearTimeout(groupTimer);
    const { notifiers: ready, nextReadyAt } = alerts.groupReady(clock.now(), config.alerting.groupWait);
    if (ready.length > 0) dispatcher.wake();
    if (running && nextReadyAt !== null) {
      groupTimer = setTimeout(group, Math.max(0, nextReadyAt - clock.now()) + 5);
      groupTimer.unref();
    }
  };

  const cycle = async (): Promise<void> => {
    let cycleAlerts: CycleAlerts | null = null;
    const result = await runCycle({
      client,
      store,
      clock,
      logger,
      concurrency: config.gateway.concurrency,
      policy: { detailsEveryMs: config.poll.detailsEvery, tickIntervalMs },
      requestCount: () => requests,
      signal: controller.signal,
      commit: (write, serverTime) =>
        store.transaction(() => {
          store.recordCycle(write);
          const now = clock.now();
          const gatewayNow = serverTime === null ? null : serverTime + (now - write.cycle.startedAt);
          cycleAlerts = pipeline.afterCycle(write.cycle, store.boxes(), now, gatewayNow);
        }),
    });
    last = { ...result, alerts: cycleAlerts };
    metrics.observeCycle(result.cycle);
    if (cycleAlerts !== null && (cycleAlerts as CycleAlerts).queued > 0) group();
    deps.onCycle?.(last);
    const now = clock.now();
    if (now - lastPrune >= PRUNE_EVERY_MS) {
      lastPrune = now;
      const deleted = store.prune(now, { rawMs: config.storage.rawRetention, rollupMs: config.storage.rollupRetention });
      const alertRows = alerts.prune(now - config.storage.rollupRetention);
      if (deleted + alertRows > 0) logger.info({ deleted: deleted + alertRows }, 'pruned history past retention');
    }
  };

  const onSkip = (): void => metrics.tickSkipped();
  let scheduler: Scheduler = startScheduler({ task: cycle, logger, onSkip });

  return {
    store,
    alerts,
    metrics,
    get httpUrl() {
      return http?.url ?? null;
    },
    async start() {
      running = true;
      if (config.http.enabled) {
        http = await startHttpServer({
          listen: config.http.listen,
          store,
          metrics,
          clock,
          logger,
          alerts: alertsReader(alerts, clock),
          // healthy while the last good cycle is younger than three schedule intervals plus a timeout
          health: { maxCycleAgeMs: 3 * tickIntervalMs + config.gateway.timeout },
        });
        logger.info({ url: http.url }, 'http endpoints listening');
      }
      void scheduler.stop();
      scheduler = startScheduler({ schedule: config.poll.schedule, task: cycle, logger, onSkip });
      dispatcher.start();
      group(); // anything left queued by a previous run
      logger.info({ schedule: config.poll.schedule, gateway: config.gateway.baseUrl, db: config.storage.path }, 'boxwatch polling');
    },
    async runOnce() {
      last = undefined;
      await scheduler.tick();
      return last;
    },
    async deliverNow() {
      group();
      await dispatcher.runAllOnce();
    },
    get skippedTicks() {
      return scheduler.skipped;
    },
    async stop() {
      running = false;
      clearTimeout(groupTimer);
      await scheduler.stop();
      await dispatcher.stop();
      await http?.close();
      controller.abort();
      await client.close();
      await Promise.all(notifiers.map((n) => n.close?.()));
      store.close();
    },
  };
}

/** Firing alerts counted by rule and severity (the boxwatch_alerts_firing gauge). */
function firingCounts(alerts: AlertStore): { rule: string; severity: string; count: number }[] {
  const counts = new Map<string, { rule: string; severity: string; count: number }>();
  for (const s of alerts.states().values()) {
    if (s.status !== 'firing') continue;
    const key = `${s.rule}\u0000${s.severity}`;
    const c = counts.get(key) ?? { rule: s.rule, severity: s.severity, count: 0 };
    c.count += 1;
    counts.set(key, c);
  }
  return [...counts.values()];
}

/**
 * /api/alerts: one entry per alert: the open ones (pending, firing, or owing a notification) and,
 * unless activeOnly, every alert with transitions since `since` (default 7 days), each with them.
 */
function alertsReader(alerts: AlertStore, clock: Clock): AlertsReader {
  return {
    list({ activeOnly, since }) {
      const states = [...alerts.states().values()];
      if (activeOnly) return states.filter((s) => s.status === 'pending' || s.status === 'firing');
      const transitions = alerts.transitionsSince(since ?? clock.now() - 7 * 86_400_000);
      const byKey = new Map<string, { key: string; rule: string; serial: string; status: string; transitions: unknown[] }>();
      for (const s of states) byKey.set(s.key, { ...s, transitions: [] });
      for (const t of transitions) {
        const entry = byKey.get(t.key) ?? { key: t.key, rule: t.rule, serial: t.serial, status: 'inactive', transitions: [] };
        entry.transitions.push(t);
        byKey.set(t.key, entry);
      }
      return [...byKey.values()];
    },
  };
}

function openFileStore(path: string, clock: Clock, logger: Logger, maxGapMs: number): SqliteStore {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  return openStore(path, { clock, logger, maxGapMs });
}
