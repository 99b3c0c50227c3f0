/**
 * The daemon's hold on a database (one `boxwatch run` per database), as the app holds it
 * (src/cluster/tenure.ts): the stores implement it, src/store/daemon-hold.ts decides what counts
 * as gone.
 */
import type { Awaitable } from '../awaitable.js';

/** Who holds a database for a daemon. */
export interface DaemonHolder {
  pid: number;
  host: string;
  /** When it took the database (ms, the store's clock). */
  since: number;
  /**
   * Its last heartbeat (ms, the wall clock of its host, whatever clock the store runs on: the
   * demo's is simulated). Absent in a holder written by a boxwatch from before heartbeats.
   */
  beat?: number;
}

/** How the daemon's hold on a database started. */
export interface DaemonLock {
  holder: DaemonHolder;
  /** The holder this daemon took over (its process was gone, or its heartbeat stopped); null when the database was free. */
  tookOver: DaemonHolder | null;
}

/** The hold as the daemon uses it. */
export interface DaemonHold {
  /** Takes the database, or refuses (StoreError `store_in_use`) naming the live holder. Claims on outbox rows left by an earlier daemon are voided. */
  take(): Awaitable<DaemonLock>;
  /** Refreshes the heartbeat; StoreError `store_in_use` when another daemon took the database over (this one must stop). */
  beat(): Awaitable<void>;
  /** Gives the database up, if this daemon still holds it. */
  release(): Awaitable<void>;
}
