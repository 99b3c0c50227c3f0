/**
 * The daemon's hold on a database: one `boxwatch run` per database. The daemon takes the hold
 * when it starts (refused while another live daemon holds it), refreshes its heartbeat every
 * DAEMON_HEARTBEAT_MS, and gives it up when it stops. A holder whose heartbeat is older than
 * DAEMON_STALE_AFTER_MS (on any host), or whose process is gone or a zombie (on this host), is
 * taken over; the daemon taken over learns it at its next heartbeat and stops.
 *
 * `DaemonHold` (src/domain/daemon-hold.ts) is what the app holds; each store keeps the holder
 * its way (SQLite:
 * `meta` key `daemon`, src/store/sqlite/store.ts; PostgreSQL: the `daemon_hold` row,
 * src/store/postgres/daemon-hold.ts). What counts as gone and what the refusals say is decided
 * here, once, for both.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { DaemonHolder } from '../domain/daemon-hold.js';
import { systemClock } from '../clock.js';
import { formatDuration } from '../duration.js';
import { StoreError } from './errors.js';
import { isoTime } from '../time-format.js';

/** A daemon refreshes its heartbeat this often (a timer of the app, never shorter than 1 s). */
export const DAEMON_HEARTBEAT_MS = 5_000;
/**
 * A holder whose last heartbeat is older than this has stopped, on whatever host (a container
 * killed elsewhere): it is taken over. Twelve heartbeats, so that a slow cycle or a clock a few
 * seconds off between hosts never makes a live daemon look gone.
 */
export const DAEMON_STALE_AFTER_MS = 60_000;

/** This process as a holder taking the database at `since` (the store's clock). */
export function thisDaemon(since: number): DaemonHolder {
  return { pid: process.pid, host: hostname(), since, beat: systemClock.now() };
}

/** The same daemon's hold (the heartbeat changes, the holder does not). */
export function sameHolder(a: DaemonHolder, b: DaemonHolder): boolean {
  return a.pid === b.pid && a.host === b.host && a.since === b.since;
}

/**
 * The holder is gone: its heartbeat stopped longer ago than DAEMON_STALE_AFTER_MS (any host), or
 * on this host its pid does not run (or is a zombie, or is ours: an earlier life). A holder on
 * another host without a heartbeat (an older boxwatch) cannot be shown to be gone.
 */
export function isStale(holder: DaemonHolder, me: DaemonHolder): boolean {
  if (holder.beat !== undefined && (me.beat as number) - holder.beat > DAEMON_STALE_AFTER_MS) return true;
  if (holder.host !== me.host) return false;
  if (holder.pid === me.pid) return true;
  try {
    process.kill(holder.pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
  return isZombie(holder.pid);
}

/**
 * A killed process its parent has not reaped yet still answers signal 0, but it is gone: Linux
 * shows it as state Z (or X) in /proc/<pid>/stat. Elsewhere (no /proc) this cannot be told.
 */
function isZombie(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  // `pid (comm) state ...`: comm may hold spaces and parentheses, so the state follows the last `)`.
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state === 'Z' || state === 'X';
}

/** The refusal of a second daemon: `database` (as it may be shown) is held by a live `holder`. */
export function inUse(database: string, holder: DaemonHolder, me: DaemonHolder, instead: string): StoreError {
  const beat = holder.beat === undefined ? '' : `, last heartbeat ${formatDuration(Math.max(0, Math.round(((me.beat as number) - holder.beat) / 1000) * 1000))} ago`;
  return new StoreError(
    'store_in_use',
    `${database} is in use by another boxwatch daemon (pid ${holder.pid} on ${holder.host}, since ${isoTime(holder.since)}${beat}); stop it first, or give this one ${instead}`,
  );
}

/** What a daemon learns at its heartbeat when another took `database` over (`holder`: who holds it now). */
export function takenOver(database: string, holder: DaemonHolder | null): StoreError {
  const who = holder === null ? 'nobody holds it now' : `now held by pid ${holder.pid} on ${holder.host}, since ${isoTime(holder.since)}`;
  return new StoreError('store_in_use', `${database} was taken over by another boxwatch daemon (${who}): this daemon's heartbeat had stopped for too long`);
}
