/**
 * The daemon's hold on a PostgreSQL database (DaemonHold of src/domain/daemon-hold.ts, whose rules
 * it applies): the one row of `daemon_hold` (migrations/postgres/0005_daemon_hold.sql). Every
 * step is one transaction that first locks the table, so that two daemons starting together
 * never both find it free; the lock goes with the transaction (or the lost connection).
 */
import { systemClock } from '../../clock.js';
import { inUse, isStale, sameHolder, takenOver, thisDaemon } from '../daemon-hold.js';
import type { DaemonHold, DaemonHolder, DaemonLock } from '../../domain/daemon-hold.js';
import type { PostgresDatabase, Transaction } from './database.js';

export class PostgresDaemonHold implements DaemonHold {
  private mine: DaemonHolder | null = null;

  constructor(
    private readonly db: PostgresDatabase,
    /** The store's clock (`since`); the heartbeat is on the wall clock, as on SQLite. */
    private readonly now: () => number,
  ) {}

  async take(): Promise<DaemonLock> {
    const me = thisDaemon(this.now());
    const tookOver = await this.db.transaction(async (tx) => {
      const holder = await lockedHolder(tx);
      if (holder !== null && !isStale(holder, me)) throw inUse(this.db.name, holder, me, 'another storage.url');
      await tx.query(
        'INSERT INTO daemon_hold (id, pid, host, since, beat) VALUES (1, $1, $2, $3, $4) ON CONFLICT (id) DO UPDATE SET pid = excluded.pid, host = excluded.host, since = excluded.since, beat = excluded.beat',
        [me.pid, me.host, me.since, me.beat],
      );
      // Only one daemon delivers: what an earlier one was sending is due again.
      await tx.query("UPDATE outbox SET status = 'pending', lease_until = NULL WHERE status = 'sending'");
      return holder;
    });
    this.mine = me;
    return { holder: me, tookOver };
  }

  async beat(): Promise<void> {
    const mine = this.mine;
    if (mine === null) return;
    await this.db.transaction(async (tx) => {
      const holder = await lockedHolder(tx);
      if (holder === null || !sameHolder(holder, mine)) {
        this.mine = null;
        throw takenOver(this.db.name, holder);
      }
      mine.beat = systemClock.now();
      await tx.query('UPDATE daemon_hold SET beat = $1 WHERE id = 1', [mine.beat]);
    });
  }

  async release(): Promise<void> {
    const mine = this.mine;
    if (mine === null) return;
    this.mine = null;
    await this.db.query('DELETE FROM daemon_hold WHERE pid = $1 AND host = $2 AND since = $3', [mine.pid, mine.host, mine.since]);
  }
}

/** The holder, with the table locked against other takers until the transaction ends. */
async function lockedHolder(tx: Transaction): Promise<DaemonHolder | null> {
  await tx.query('LOCK TABLE daemon_hold IN SHARE ROW EXCLUSIVE MODE');
  const [row] = await tx.query<DaemonHolder & { beat: number }>('SELECT pid, host, since, beat FROM daemon_hold WHERE id = 1');
  return row === undefined ? null : { pid: row.pid, host: row.host, since: row.since, beat: row.beat };
}
