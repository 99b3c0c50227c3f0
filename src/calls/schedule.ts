/**
 * The call syncs' schedule: per account its ingestion (its own client, tick and transaction) on
 * `calls.schedule`, and what follows a stored sync (metrics, the test calls' statuses, the archive)
 * as a list of observers run in order. Replicas: an account's calls are synced only by the replica
 * that leads it.
 */
import type { Awaitable } from '../awaitable.js';
import type { Clock } from '../clock.js';
import type { CallsConfig, RuleConfig } from '../config/schema.js';
import { errorMessage } from '../errors.js';
import type { GatewayClient } from '../gateway/types.js';
import type { Logger } from '../log.js';
import { scheduleIntervalMs, startScheduler, type Scheduler } from '../poller/scheduler.js';
import type { CallsRepo } from '../domain/calls.js';
import { storeFailureCode } from '../store/errors.js';
import { createCallIngest, type CallIngest, type CallSyncResult } from './index.js';

/** One account as its call sync needs it. */
export interface CallAccount {
  name: string;
  client: GatewayClient;
  secretKey: string;
  concurrency: number;
  logger: Logger;
  /** Its gateway clock's skew as the last poll saw it (null: unknown). */
  skewMs: () => number | null;
}

/** What runs after an account's call sync was stored, in the order given. */
export type CallSyncObserver = (account: string, result: CallSyncResult) => Awaitable<void>;

/** Per account its call ingestion; empty without a `calls:` section. */
export function createCallIngests(o: {
  config: CallsConfig | undefined;
  rules: readonly RuleConfig[];
  repo: CallsRepo;
  accounts: readonly CallAccount[];
  timezone: string;
  clock: Clock;
  wantRecordings: boolean;
}): Map<string, CallIngest> {
  const config = o.config;
  if (config === undefined) return new Map();
  // Facts no call sync has renewed for two of its intervals are too old to judge with.
  const maxAgeMs = 2 * scheduleIntervalMs(config.schedule, o.timezone);
  return new Map(
    o.accounts.map((a) => [
      a.name,
      createCallIngest({
        account: a.name,
        config,
        rules: o.rules,
        repo: o.repo,
        client: a.client,
        secretKey: a.secretKey,
        concurrency: a.concurrency,
        clock: o.clock,
        logger: a.logger,
        gatewayOffsetMs: () => a.skewMs() ?? 0,
        wantRecordings: o.wantRecordings,
        maxAgeMs,
      }),
    ]),
  );
}

export interface CallSchedules {
  /** Starts each account's schedule on `calls.schedule` (ticks only by runOnce until then). */
  start(): void;
  /** One call sync now of `account`, or of every account in turn (the last one's result); undefined when skipped or calls are off. */
  runOnce(account?: string): Promise<CallSyncResult | undefined>;
  /** Stops the schedules and waits for the syncs in flight. */
  stop(): Promise<void>;
}

export function createCallSchedules(o: {
  accounts: readonly { name: string; logger: Logger }[];
  ingests: ReadonlyMap<string, CallIngest>;
  /** `calls.schedule` (undefined: calls are off). */
  schedule: string | undefined;
  timezone: string;
  /** The clock the schedules tick on. */
  clock: Clock;
  /** Whether this process works for the account now (replicas: leads it). */
  holds: (account: string) => boolean;
  /** Run in order after each stored sync; null entries are skipped (a stage that is off). */
  observers: readonly (CallSyncObserver | null)[];
  signal: AbortSignal;
}): CallSchedules {
  const observers = o.observers.filter((x): x is CallSyncObserver => x !== null);
  const accounts = o.accounts.filter((a) => o.ingests.has(a.name));
  /** Per account, the result of its last call sync (what `runOnce` returns). */
  const last = new Map<string, CallSyncResult>();

  const sync = (name: string, logger: Logger) => async (): Promise<void> => {
    const ingest = o.ingests.get(name);
    if (!ingest || !o.holds(name)) return;
    // Its own result: the accounts' syncs run at the same moment, and each awaits between here and the observers.
    let result: CallSyncResult;
    try {
      result = await ingest.run(o.signal);
    } catch (err) {
      if (o.signal.aborted) return;
      const code = storeFailureCode(err);
      if (code === undefined) throw err; // a bug: the scheduler logs it as a crash
      logger.error({ code, err: errorMessage(err) }, 'call sync could not be stored; the next cycle reads again');
      return;
    }
    last.set(name, result);
    for (const observe of observers) await observe(name, result);
  };

  const schedulersOn = (schedule: string | undefined): Scheduler[] =>
    accounts.map((a) => startScheduler({ ...(schedule !== undefined && { schedule, timezone: o.timezone }), task: sync(a.name, a.logger), logger: a.logger, clock: o.clock }));
  let schedulers = schedulersOn(undefined);

  return {
    start() {
      if (o.schedule === undefined) return;
      for (const s of schedulers) void s.stop();
      schedulers = schedulersOn(o.schedule);
    },
    async runOnce(account) {
      let result: CallSyncResult | undefined;
      for (const [i, a] of accounts.entries()) {
        if (account !== undefined && a.name !== account) continue;
        last.delete(a.name);
        await (schedulers[i] as Scheduler).tick();
        result = last.get(a.name);
      }
      return result;
    },
    async stop() {
      await Promise.all(schedulers.map((s) => s.stop()));
    },
  };
}
