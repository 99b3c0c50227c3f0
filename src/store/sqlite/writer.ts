/**
 * The SQLite side of the history write path: loads the writer's state (src/store/history/writer.ts)
 * from the database and applies each cycle's plan with the prepared statements. Runs inside the
 * cycle's transaction (store.ts); after a rollback `reset()` makes the next cycle load again.
 */
import { DEFAULT_ACCOUNT } from '../../box-id.js';
import { HOUR_MS, hourOf } from '../codec.js';
import { openHoursOf } from '../history/retention.js';
import { closedHoursOf, CycleWriter, boxValues, rollupsOf, type BoxWrite, type ClosingPlan, type HistoryPlan } from '../history/writer.js';
import type { BoxRow, SampleRow } from '../history/rows.js';
import type { BoxState, CycleWrite, RecordedCycle } from '../../domain/store.js';
import type { Statements } from './rows.js';

export class SqliteHistoryWriter {
  private readonly writer: CycleWriter;

  constructor(
    private readonly s: Statements,
    private readonly maxGapMs: number,
    /** The raw retention: the accounts polled within it of the newest cycle have open hours to load (openHoursOf). */
    private readonly rawRetentionMs: number,
  ) {
    this.writer = new CycleWriter(maxGapMs);
  }

  /** The start of each account's latest cycle (the hours being written: their rows have no rollup yet). */
  lastCycles(): { account: string; t: number }[] {
    this.load();
    return this.writer.lastCycles();
  }

  /** Records one cycle; call inside a transaction. */
  record(write: CycleWrite): RecordedCycle {
    this.load();
    const plan = this.writer.record(write);
    this.apply(plan);
    return plan.recorded;
  }

  /** The fleet from the writer's memory (see CycleWriter.fleet); null before it is loaded. */
  fleet(): BoxState[] | null {
    return this.writer.fleet();
  }

  /** The boxes leave the fleet (see Store.forgetBoxes); call inside a transaction. Returns how many were not forgotten already. */
  forget(serials: readonly string[], now: number): number {
    let n = 0;
    for (const serial of serials) n += this.s.forgetBox.run(now, serial).changes;
    this.writer.markForgotten(serials);
    return n;
  }

  /** Closes the open hours of accounts no longer configured (see CycleWriter.retire); call inside the retiring cycle's transaction. */
  retire(accounts: readonly string[], now: number): void {
    if (accounts.length === 0) return;
    this.load();
    this.applyClosing(this.writer.retire(accounts, now));
  }

  /** Forgets the in-memory state (after a rollback); it is loaded again when next needed. */
  reset(): void {
    this.writer.reset();
  }

  private load(): void {
    if (this.writer.loaded) return;
    const s = this.s;
    const lastCycles = s.lastCycles.all() as { account: string; t: number }[];
    const boxes = s.allBoxes.all() as BoxRow[];
    this.writer.load({ boxes, lastCycles, openRows: this.openRows(boxes, lastCycles), strings: s.allStrings.all() as { id: number; value: string }[] });
  }

  /**
   * The sample rows of each box from its account's open hour on (openHoursOf): those of the
   * newest open hour and later in one range read; a box whose account's open hour is older (an
   * account removed within the raw retention, or one not yet polled in the newest hour) also its
   * rows of the hours in between, box by box up to the end of its data. A removed account's last
   * hour thus costs its own boxes' rows, not the whole fleet's rows since.
   */
  private openRows(boxes: readonly BoxRow[], lastCycles: readonly { account: string; t: number }[]): SampleRow[] {
    const openHours = openHoursOf(lastCycles, this.rawRetentionMs);
    if (openHours.size === 0) return [];
    const newest = Math.max(...openHours.values());
    const rows = this.s.samplesFrom.all(newest) as SampleRow[];
    for (const b of boxes) {
      const open = openHours.get(b.account);
      if (open === undefined || open >= newest) continue;
      const end = Math.min(newest - 1, hourOf(b.last_polled + this.maxGapMs));
      for (let hour = open; hour <= end; hour++) {
        const data = this.s.sample.get(hour, b.id) as Buffer | undefined;
        if (data !== undefined) rows.push({ hour, box_id: b.id, data });
      }
    }
    return rows;
  }

  private apply(plan: HistoryPlan): void {
    const s = this.s;
    const c = plan.cycle;
    const t = c.startedAt;
    s.insertCycle.run(t, c.durationMs, c.requests, c.outcome, c.errorCode, c.error, c.boxes, c.detailsFetched, c.account ?? DEFAULT_ACCOUNT);
    for (const str of plan.strings) s.insertString.run(str.id, str.value);
    for (const b of plan.newBoxes) s.insertBox.run(b.id, b.snap.serial, ...boxValues(b.snap), t, t, b.segStart, b.account);
    // A listed box whose row holds its values already is not written: its last poll is its
    // account's latest cycle while its segment is open (LAST_POLLED, rows.ts).
    for (const b of plan.seen) if (b.changed) updateBox(s, b, t);
    for (const serial of plan.missing) s.markMissing.run(t, serial);
    this.applyClosing(plan);
  }

  /** The segments that ended, the rows and the rollups of closed hours (of a cycle, or of retired accounts). */
  private applyClosing(plan: ClosingPlan): void {
    const s = this.s;
    for (const c of plan.closed) s.closeSegment.run(c.lastPolled, c.id);
    for (const r of plan.samples) s.upsertSample.run(r.hour, r.box_id, r.data);
    if (plan.closedHours.length === 0) return;
    const starts = new Map(closedHoursOf(plan).map(({ account, hours }) => [account, hours.flatMap((h) => s.cycleStarts.all(account, h * HOUR_MS, (h + 1) * HOUR_MS) as number[])]));
    for (const values of rollupsOf(plan, starts)) s.upsertRollup.run(...values);
  }
}

/**
 * Updates a listed box's row (the `updateBox` statement: the snapshot's columns in BOX_COLUMNS
 * order, its last poll, its segment's start, its id). The values are passed one by one, not as
 * `...boxValues(snap)`: better-sqlite3's `run` called with a spread (or an array) allocates
 * several times the row's own values, and this runs for every changed row of every cycle.
 */
function updateBox(s: Statements, b: BoxWrite, t: number): void {
  const snap = b.snap;
  s.updateBox.run(snap.id, snap.name, snap.connected ? 1 : 0, snap.battery, snap.signal, snap.firmware, snap.lastSeen, snap.registeredAt, snap.location, snap.ip, snap.detailsAt, t, b.segStart, b.id);
}
