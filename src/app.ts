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
  /** Starts the schedule, the grouper and the dispatcher. */
  start(): void;
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
  let requests = 0;
  const client =
    deps.client ??
    createGatewayClient({
      baseUrl: config.gateway.baseUrl,
      secretKey: config.gateway.secretKey,
      timeoutMs: config.gateway.timeout,
      connections: Math.max(config.gateway.concurrency, 2),
      clock,
      onRequest: () => {
        requests += 1;
      },
    });
  const store = deps.store ?? openFileStore(config.storage.path, clock, logger);
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
  });
  const tickIntervalMs = scheduleIntervalMs(config.poll.schedule);
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

  let scheduler: Scheduler = startScheduler({ task: cycle, logger });

  return {
    store,
    alerts,
    start() {
      running = true;
      void scheduler.stop();
      scheduler = startScheduler({ schedule: config.poll.schedule, task: cycle, logger });
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
      controller.abort();
      await client.close();
      await Promise.all(notifiers.map((n) => n.close?.()));
      store.close();
    },
  };
}

function openFileStore(path: string, clock: Clock, logger: Logger): SqliteStore {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  return openStore(path, { clock, logger });
}
