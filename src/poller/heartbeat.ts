/**
 * The daemon's signs of life in the log, so that an operator watching `boxwatch run` knows it
 * works while nothing happens: at `info`, one `polling ok: 50 boxes, 0 firing, last cycle 42 ms`
 * after the first cycle and then every 5 minutes, and one line at each change of the gateway's
 * health (reachable -> failing -> reachable again). (Every cycle is logged at `debug` by the
 * poller.) Pure bookkeeping over the cycle records; time comes from the records.
 */
import type { Logger } from '../log.js';
import type { CycleRecord } from '../domain/store.js';
import { isGatewayDown } from '../alerts/gateway.js';

export const HEARTBEAT_EVERY_MS = 5 * 60_000;

export interface Heartbeat {
  /** After each recorded cycle, with the number of firing alerts after it. */
  afterCycle(cycle: CycleRecord, firing: number): void;
}

export function createHeartbeat(logger: Logger, everyMs = HEARTBEAT_EVERY_MS): Heartbeat {
  let lastLine: number | null = null;
  let health: 'ok' | 'failed' | null = null;
  let failedSince = 0;
  let failedCycles = 0;
  return {
    afterCycle(cycle, firing) {
      const at = cycle.startedAt + cycle.durationMs;
      if (isGatewayDown(cycle)) {
        failedCycles += 1;
        if (health !== 'failed') {
          failedSince = cycle.startedAt;
          logger.warn({ code: cycle.errorCode }, `gateway failing (${cycle.errorCode ?? 'error'}): polls fail until it answers again`);
        }
        health = 'failed';
        return;
      }
      if (health === 'failed') {
        const s = failedCycles === 1 ? '' : 's';
        logger.info({ failedCycles, failedSinceMs: failedSince }, `gateway answering again after ${failedCycles} failed cycle${s}`);
        lastLine = null; // and a fresh "polling ok" right away
      }
      health = 'ok';
      failedCycles = 0;
      if (lastLine === null || at - lastLine >= everyMs) {
        lastLine = at;
        logger.info({ boxes: cycle.boxes, firing, ms: cycle.durationMs }, `polling ok: ${cycle.boxes} boxes, ${firing} firing, last cycle ${cycle.durationMs} ms`);
      }
    },
  };
}
