/**
 * The test calls' schedule: one scheduler per `test_calls:` entry, each never overlapping itself
 * (src/calls/test-calls.ts places the calls), and the refresh of their verdicts after a call sync.
 */
import type { TestCallConfig } from '../config/schema.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { startScheduler, type Scheduler } from '../poller/scheduler.js';
import type { CallSyncResult } from './sync.js';
import { createTestCalls, type TestCallAttempt, type TestCalls, type TestCallsDeps } from './test-calls.js';

export interface TestCallSchedules {
  /** Starts every entry's schedule (ticks only by runOnce until then). */
  start(): void;
  /** One tick of every entry's schedule now (or of the one named); what the attempts did. */
  runOnce(entry?: string): Promise<TestCallAttempt[]>;
  /** Stops the schedules and waits for the attempts in flight. */
  stop(): Promise<void>;
}

export function createTestCallSchedules(o: {
  /** Null when test calls are off (no `test_calls:`, or no `calls:` to see their ends). */
  testCalls: TestCalls | null;
  /** The configured entries (`test_calls:`; empty without). */
  entries: readonly TestCallConfig[];
  timezone: string;
  /** The clock the schedules tick on. */
  clock: Clock;
  logger: Logger;
  signal: AbortSignal;
}): TestCallSchedules {
  const { testCalls, signal, logger } = o;
  let attempts: TestCallAttempt[] = [];
  const task = (name: string) => async (): Promise<void> => {
    if (!testCalls) return;
    try {
      attempts.push(...(await testCalls.runEntry(name, signal)));
    } catch (err) {
      if (signal.aborted) return;
      throw err; // the scheduler logs it
    }
  };
  let schedulers: { name: string; scheduler: Scheduler }[] = o.entries.map((e) => ({ name: e.name, scheduler: startScheduler({ task: task(e.name), logger, clock: o.clock }) }));

  return {
    start() {
      if (!testCalls) return;
      for (const s of schedulers) void s.scheduler.stop();
      schedulers = testCalls.entries.map((e) => ({ name: e.name, scheduler: startScheduler({ schedule: e.schedule, timezone: o.timezone, task: task(e.name), logger, clock: o.clock }) }));
    },
    async runOnce(entry) {
      attempts = [];
      for (const s of schedulers) if (entry === undefined || s.name === entry) await s.scheduler.tick();
      return attempts;
    },
    async stop() {
      await Promise.all(schedulers.map((s) => s.scheduler.stop()));
    },
  };
}

/** After a successful call sync the test calls' statuses changed: their verdicts are read again. */
export function refreshTestCalls(testCalls: TestCalls | null): ((account: string, result: CallSyncResult) => Promise<void>) | null {
  if (testCalls === null) return null;
  return async (_account, result) => {
    if (result.outcome === 'ok') await testCalls.refresh();
  };
}

/**
 * The test calls' verdicts an account's cycle judges with: only after a successful call sync of
 * the account (its call facts) are its test calls' ends known; null otherwise or when test calls are off.
 */
export function testCallVerdictsOf(testCalls: TestCalls | null, callFacts: (account: string) => unknown, now: () => number): (account: string) => ReturnType<TestCalls['verdicts']> | null {
  return (account) => (testCalls !== null && callFacts(account) ? testCalls.verdicts(now()) : null);
}

/** Test calls of a `test_calls:` section; null without one, or without `calls:` (their ends are read by the call sync). */
export function testCallsOf(entries: readonly TestCallConfig[] | undefined, calls: object | null, deps: Omit<TestCallsDeps, 'entries'>): TestCalls | null {
  return calls !== null && entries !== undefined ? createTestCalls({ ...deps, entries }) : null;
}
