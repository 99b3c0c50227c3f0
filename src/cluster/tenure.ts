/**
 * How a daemon keeps the others off its work: alone, the database's hold (one `boxwatch run` per
 * database, src/store/daemon-hold.ts) with its heartbeat; as a replica (`cluster:`), per-account
 * leases (replica.ts) and no hold.
 */
import type { DaemonHold } from '../domain/daemon-hold.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import { StoreError, storeFailureCode } from '../store/errors.js';
import type { Replica } from './replica.js';

export interface Tenure {
  /** At start: takes the database (StoreError `store_in_use` while another daemon holds it), or starts the replica's leases. */
  begin(): Promise<void>;
  /** As stopping begins: the hold's heartbeat stops. */
  halt(): void;
  /** After the work stopped: a replica's leases are released for the others at once. */
  leave(): Promise<void>;
  /** Last before the store closes: the hold given up (a failure is logged; the hold then goes stale). */
  release(): Promise<void>;
}

export function createTenure(o: {
  replica: Replica | null;
  hold: DaemonHold;
  /** How often the hold's heartbeat is refreshed. */
  beatEveryMs: number;
  /** The database's name in log lines. */
  db: string;
  logger: Logger;
  /** A replica announces its archive directory's id from its start, even while it leads no account (src/archive/identity.ts). */
  identifyArchive: () => void;
  /** Another daemon took the database over (this one's heartbeat had stopped for too long): this one must stop. */
  onLost: (err: StoreError) => void;
}): Tenure {
  const { hold, logger, replica } = o;
  let timer: NodeJS.Timeout | undefined;

  /** The hold's heartbeat: a busy database only delays it; a hold taken over by another daemon stops this one. */
  const beat = async (): Promise<void> => {
    try {
      await hold.beat();
    } catch (err) {
      if (!(err instanceof StoreError && err.code === 'store_in_use')) {
        logger.warn({ code: storeFailureCode(err), err: errorMessage(err) }, 'could not refresh the database hold; trying again at the next heartbeat');
        return;
      }
      clearInterval(timer);
      logger.error({ code: err.code, db: o.db }, err.message);
      o.onLost(err);
    }
  };

  return {
    async begin() {
      if (replica !== null) {
        o.identifyArchive();
        replica.start(); // no hold on the database: the accounts are leased (docs/operations.md)
        return;
      }
      const { tookOver } = await hold.take();
      if (tookOver !== null) logger.warn({ db: o.db, previous: tookOver }, `took the database over from a daemon that is gone (pid ${tookOver.pid} on ${tookOver.host})`);
      timer = setInterval(() => void beat(), o.beatEveryMs);
      timer.unref();
    },
    halt() {
      clearInterval(timer);
    },
    async leave() {
      await replica?.stop();
    },
    async release() {
      try {
        await hold.release();
      } catch (err) {
        logger.warn({ code: storeFailureCode(err), err: errorMessage(err) }, 'could not give the database hold up; another daemon takes it over once its heartbeat is old');
      }
    },
  };
}

/** Replicas: a frozen replica's open transaction is ended, and its locks released, before its lease expires (undefined alone: no limit). */
export function idleInTransactionTimeoutOf(cluster: { lease: number } | undefined): number | undefined {
  return cluster === undefined ? undefined : Math.floor(cluster.lease / 2);
}
