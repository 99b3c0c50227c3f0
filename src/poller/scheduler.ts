/**
 * Runs the poll cycle on a cron schedule, never overlapping: a tick that finds the previous cycle
 * still running is skipped and counted. `stop()` stops the schedule and waits for the cycle in
 * flight. Schedules are read in `timezone` (`poll.timezone`, default UTC), never the host's.
 * croner parses the expressions and finds their next times; the wait is the injected Clock's
 * sleep, so a run missed because the process was blocked or suspended is logged and not run late
 * (see `scheduleTimer`), and tests advance a fake clock. In UTC the
 * times are computed without `Intl` (a fixed offset), which spares the daemon loading ICU's data.
 */
import type { Clock } from '../clock.js';
import { DEFAULT_TIMEZONE, parseSchedule } from '../cron.js';
import type { Logger } from '../log.js';
import { isoTime } from '../time-format.js';

export interface Scheduler {
  /** Runs one tick now (what the schedule calls); resolves when it ran or was skipped. */
  tick(): Promise<'ran' | 'skipped'>;
  readonly skipped: number;
  readonly running: boolean;
  /** When the schedule fires next (ms), or null without a schedule. */
  nextRun(): number | null;
  stop(): Promise<void>;
}

export interface SchedulerOptions {
  /** Cron expression (5 fields, or 6 with seconds first); omit to drive ticks only by calling tick() (tests). */
  schedule?: string;
  /** IANA time zone the schedule is read in (default UTC). */
  timezone?: string;
  task: () => Promise<unknown>;
  logger: Logger;
  /** The schedule's time: croner computes the times from its now(), and the wait is its sleep(). */
  clock: Clock;
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

  const timer = options.schedule ? scheduleTimer(options.schedule, options.timezone ?? DEFAULT_TIMEZONE, () => void tick(), options.logger, options.clock) : null;

  return {
    tick,
    get skipped() {
      return skipped;
    },
    get running() {
      return inFlight !== null;
    },
    nextRun() {
      return timer?.next() ?? null;
    },
    async stop() {
      stopped = true;
      timer?.stop();
      if (inFlight) await inFlight;
    },
  };
}

/** Milliseconds between two consecutive runs of a cron expression (for the details budget). */
export function scheduleIntervalMs(expression: string, timezone = DEFAULT_TIMEZONE): number {
  const [a, b] = parseSchedule(expression, timezone).nextRuns(2);
  return a && b ? b.getTime() - a.getTime() : 30_000;
}

/** A run late by more than this was missed: it is logged, not run late. */
const MISSED_AFTER_MS = 1_000;

/**
 * Calls `run` at each time of the schedule. A timer that fires more than a second after its time
 * (the event loop was blocked, the machine suspended) runs nothing for the times it passed but
 * logs them in one line; then it sleeps until the next time still ahead.
 */
function scheduleTimer(expression: string, timezone: string, run: () => void, logger: Logger, clock: Clock): { next(): number; stop(): void } {
  const cron = parseSchedule(expression, timezone);
  const after = (ms: number): number => (cron.nextRun(new Date(ms)) as Date).getTime();
  let due = after(clock.now());
  const stopped = new AbortController();
  const fire = (): void => {
    const now = clock.now();
    const missed: number[] = [];
    while (due <= now) {
      const following = after(due);
      if (following > now && now - due <= MISSED_AFTER_MS) run();
      else missed.push(due);
      due = following;
    }
    // One line for the runs one wake-up found missed (a suspension of an hour at a 1 s schedule is
    // one line, not 3,600): the first, the last and how many.
    if (missed.length > 0) {
      logger.warn({ at: isoTime(missed[0] as number), last: isoTime(missed[missed.length - 1] as number), missed: missed.length }, 'a scheduled run was missed: the process was busy or suspended at that time');
    }
  };
  const loop = async (): Promise<void> => {
    while (!stopped.signal.aborted) {
      try {
        await clock.sleep(due - clock.now(), stopped.signal);
      } catch {
        return; // stopped
      }
      fire();
    }
  };
  void loop();
  return {
    next: () => due,
    stop: () => stopped.abort(),
  };
}
