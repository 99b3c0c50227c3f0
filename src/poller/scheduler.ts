/**
 * Runs the poll cycle on a node-cron schedule, never overlapping: a tick that finds the previous
 * cycle still running is skipped and counted. `stop()` stops the schedule and waits for the cycle
 * in flight. Schedules are read in `timezone` (`poll.timezone`, default UTC), never the host's.
 */
import cron from 'node-cron';
import type { Logger } from '../log.js';
import { isoTime } from '../time.js';

export interface Scheduler {
  /** Runs one tick now (what the schedule calls); resolves when it ran or was skipped. */
  tick(): Promise<'ran' | 'skipped'>;
  readonly skipped: number;
  readonly running: boolean;
  /** When the schedule fires next (ms), or null without a schedule. */
  nextRun(): number | null;
  stop(): Promise<void>;
}

/** The time zone schedules are read in unless configured (`poll.timezone`). */
export const DEFAULT_TIMEZONE = 'UTC';

export interface SchedulerOptions {
  /** node-cron expression; omit to drive ticks only by calling tick() (tests). */
  schedule?: string;
  /** IANA time zone the schedule is read in (default UTC). */
  timezone?: string;
  task: () => Promise<unknown>;
  logger: Logger;
  /** Called when a tick is skipped because the previous cycle is still running. */
  onSkip?: () => void;
  /** Called when a cycle throws (after it is logged). */
  onCrash?: (err: unknown) => void;
}

export function startScheduler(options: SchedulerOptions): Scheduler {
  let inFlight: Promise<unknown> | null = null;
  let skipped = 0;
  let stopped = false;

  const tick = async (): Promise<'ran' | 'skipped'> => {
    if (stopped) return 'skipped';
    if (inFlight) {
      skipped += 1;
      options.onSkip?.();
      options.logger.warn({ skipped }, 'previous poll cycle still running; tick skipped');
      return 'skipped';
    }
    inFlight = options.task().catch((err: unknown) => {
      options.logger.error({ err }, 'poll cycle crashed');
      options.onCrash?.(err);
    });
    try {
      await inFlight;
    } finally {
      inFlight = null;
    }
    return 'ran';
  };

  const task = options.schedule
    ? cron.schedule(
        options.schedule,
        () => {
          void tick();
        },
        { timezone: options.timezone ?? DEFAULT_TIMEZONE },
      )
    : null;
  // node-cron notices a run it missed (the process was blocked or suspended at that second) and,
  // unless someone listens, prints a raw warning on stdout: it goes through our log instead.
  task?.on('execution:missed', (ctx) => {
    options.logger.warn({ at: isoTime(ctx.date.getTime()) }, 'a scheduled run was missed: the process was busy or suspended at that time');
  });

  return {
    tick,
    get skipped() {
      return skipped;
    },
    get running() {
      return inFlight !== null;
    },
    nextRun() {
      return task?.getNextRun()?.getTime() ?? null;
    },
    async stop() {
      stopped = true;
      if (task) await task.destroy();
      if (inFlight) await inFlight;
    },
  };
}

/** Milliseconds between two consecutive runs of a cron expression (for the details budget). */
export function scheduleIntervalMs(expression: string, timezone = DEFAULT_TIMEZONE): number {
  const task = cron.createTask(expression, () => undefined, { timezone });
  try {
    const [a, b] = task.getNextRuns(2);
    return a && b ? b.getTime() - a.getTime() : 30_000;
  } finally {
    void task.destroy();
  }
}
