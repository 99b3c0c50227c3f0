/**
 * The group stage's timer: moves groups whose group_wait has passed into the outbox
 * (alerts/grouper.ts decides which), wakes the dispatcher, and runs again when the next group is
 * ready. Replicas: the items of each led account, each release fenced.
 */
import { releaseReadyGroups } from '../alerts/grouper.js';
import type { GroupQueue } from '../alerts/repositories.js';
import { timerDelay, type Clock } from '../clock.js';
import { isLeaseLost } from '../domain/leases.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import { storeFailureCode } from '../store/errors.js';
import type { AlertItem, NotificationMessage } from '../domain/notifications.js';
import type { Leadership } from '../cluster/leadership.js';

/** After a failed write of the group_wait queue (database locked or full), try again this much later. */
export const GROUP_RETRY_MS = 5_000;

export interface Grouping {
  /** One pass now; while started, the timer is set for the next group that becomes ready. */
  run(): Promise<void>;
  /** From now on a pass sets the timer for the next ready group. */
  start(): void;
  /** Clears the timer; passes no longer set it. */
  stop(): void;
}

export function createGrouping(o: {
  queue: GroupQueue<AlertItem, NotificationMessage>;
  groupWaitMs: number;
  /** The configured notifiers (items of removed ones are dropped). */
  configured: ReadonlySet<string>;
  /** The fences to release under, and whom to tell of a lost one: one unfenced pass alone (`ALONE`). */
  leadership: Pick<Leadership, 'fences' | 'lost'>;
  /** Something was released: the dispatcher has work. */
  wake: () => void;
  clock: Clock;
  logger: Logger;
}): Grouping {
  const { clock } = o;
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  const run = async (): Promise<void> => {
    clearTimeout(timer);
    let next: number | null;
    try {
      next = null;
      for (const fence of o.leadership.fences()) {
        const { released, nextReadyAt } = await releaseReadyGroups(o.queue, clock.now(), o.groupWaitMs, o.configured, fence).catch((err: unknown) => {
          if (fence === undefined || !isLeaseLost(err)) throw err;
          o.leadership.lost(fence);
          return { released: [], nextReadyAt: null };
        });
        if (released.length > 0) o.wake();
        if (nextReadyAt !== null) next = next === null ? nextReadyAt : Math.min(next, nextReadyAt);
      }
    } catch (err) {
      // The database is locked or full: nothing was moved (one transaction); try again later.
      o.logger.error({ code: storeFailureCode(err), err: errorMessage(err) }, 'cannot move grouped alerts to the outbox; will retry');
      next = clock.now() + GROUP_RETRY_MS;
    }
    if (running && next !== null) {
      timer = setTimeout(() => void run(), timerDelay(next - clock.now() + 5));
      timer.unref();
    }
  };
  return {
    run,
    start() {
      running = true;
    },
    stop() {
      running = false;
      clearTimeout(timer);
    },
  };
}
