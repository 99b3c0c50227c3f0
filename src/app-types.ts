/**
 * What the composition root (src/app.ts) takes and what it gives: the daemon as the CLI, the demo
 * and the tests drive it.
 */
import type { AlertQueries } from './alerts/repositories.js';
import type { ArchiveFs, Archiver, ArchivePassResult } from './archive/index.js';
import type { CallIngest, CallSyncResult } from './calls/index.js';
import type { TestCallAttempt, TestCalls } from './calls/test-calls.js';
import type { Clock } from './clock.js';
import type { Replica } from './cluster/replica.js';
import type { Config } from './config/index.js';
import type { GatewayClient } from './gateway/types.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';
import type { LineSink } from './notify/console.js';
import type { OutboxRepository } from './domain/outbox.js';
import type { Notifier } from './domain/notifications.js';
import type { AccountCycle } from './poller/account-loop.js';
import type { DaemonHold } from './domain/daemon-hold.js';
import type { DataStore } from './store/index.js';

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

/** A cycle as it was stored, with what its alert stage decided. */
export type AppCycle = AccountCycle;

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
