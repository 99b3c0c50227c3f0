/**
 * The write path of the SQLite history: one poll cycle at a time, into `cycles`, `boxes`,
 * `samples` (compact hour rows, codec.ts) and, when an hour closes, `rollups`. How time coverage
 * works:
 *
 * - A value observed at a poll holds until the next poll attempt (ok or failed), but at most
 *   `maxGapMs`. Consecutive polls in which a box was listed form a segment; a failed cycle, a
 *   cycle without the box, or a pause longer than `maxGapMs` ends it. Outside segments there is
 *   no data (a gap).
 * - Each box has one row per hour it was covered in: the covered pieces of the hour and the value
 *   changes, first event full so that every row decodes on its own. The open hour's rows are kept
 *   in memory and written when they change; the open segment's start and last poll live in the
 *   box's row of `boxes`, which every cycle updates anyway.
 * - When the first cycle of a new hour is recorded, the previous hour's rows are final: their
 *   rollups are computed from them and written.
 * - Cycle times only move forward. When the wall clock stepped back (NTP correction, VM restore)
 *   a cycle is recorded 1 ms after the previous one instead of being refused, and the caller is
 *   told by how much the clock was behind (it logs and counts it). This holds across restarts:
 *   the previous cycle is read from the database.
 *
 * The writer also holds every box's row of `boxes` as it wrote it, and whether the box is
 * forgotten (`forget`), so that `fleet()` answers the fleet without reading it back after each
 * write. It is this connection's view: when another connection commits (a CLI `box forget`,
 * `ack`, `silence`), the store calls `reset()` and it is read again (store.ts).
 *
 * The caller runs `record` inside a transaction (store.ts); if that rolls back, `reset()` drops
 * the in-memory state and it is reloaded from the database at the next cycle.
 */
import type { BoxSnapshot } from '../../model.js';
import { HOUR_MS, addObservation, decodeRow, emptyRow, encodeRow, hourOf, type HourRow, type Values } from '../codec.js';
import type { BoxState, CycleWrite, RecordedCycle } from '../types.js';
import { hourStats, toBoxState, type BoxRow, type HourStats, type Statements, type StringTable } from './rows.js';

/** One box and hour of stored or live data. */
interface RowRef {
  id: number;
  hour: number;
  row: HourRow;
}

/** Write-path state of one box. */
interface Head {
  id: number;
  serial: string;
  segStart: number | null;
  lastObs: number | null;
  values: Values | null;
  ref: RowRef | null;
  /** The box's row of `boxes` as last written (a new object at each change, never mutated). */
  state: BoxState;
  /** Left out of the fleet (forgotten_at set) until the gateway lists the box again. */
  forgotten: boolean;
}

export class CycleWriter {
  private heads: Map<string, Head> | null = null;
  /** The heads in serial order (the order of `SELECT ... ORDER BY serial`); null: read it again. */
  private order: Head[] | null = null;
  private lastCycleT: number | null = null;
  private openHourValue: number | null = null;
  /** Rows changed by the cycle being recorded. */
  private dirty = new Set<RowRef>();
  /** Rows of earlier hours replaced by a newer row during the cycle being recorded. */
  private superseded: RowRef[] = [];

  constructor(
    private readonly s: Statements,
    private readonly strings: StringTable,
    readonly maxGapMs: number,
  ) {
    if (!(maxGapMs > 0)) throw new RangeError('maxGapMs must be positive');
  }

  /** The hour being written (rows of it and later have no rollup yet); null before the first cycle. */
  openHour(): number | null {
    this.load();
    return this.openHourValue;
  }

  /** Records one cycle; call inside a transaction. */
  record(write: CycleWrite): RecordedCycle {
    const heads = this.load();
    const own = write.cycle.startedAt;
    const last = this.lastCycleT;
    const startedAt = last !== null && own <= last ? last + 1 : own;
    try {
      this.write(write, startedAt, heads);
      this.lastCycleT = startedAt;
    } finally {
      this.dirty.clear();
      this.superseded = [];
    }
    return { startedAt, clockBehindMs: startedAt === own ? 0 : (last as number) - own };
  }

  /**
   * The fleet (every box not forgotten) in serial order, as `fleetBoxes` would read it; null until
   * this writer is loaded (it is by the first cycle recorded): then read the table.
   */
  fleet(): BoxState[] | null {
    const heads = this.heads;
    if (heads === null) return null;
    // New boxes were added: their place in SQLite's order of serials is read from the index.
    this.order ??= (this.s.serials.all() as string[]).map((serial) => heads.get(serial) as Head);
    const fleet: BoxState[] = [];
    for (const head of this.order) if (!head.forgotten) fleet.push(head.state);
    return fleet;
  }

  /** The boxes leave the fleet (see Store.forgetBoxes); call inside a transaction. Returns how many were not forgotten already. */
  forget(serials: readonly string[], now: number): number {
    let n = 0;
    for (const serial of serials) {
      if (this.s.forgetBox.run(now, serial).changes === 0) continue;
      n++;
      const head = this.heads?.get(serial);
      if (head !== undefined) head.forgotten = true;
    }
    return n;
  }

  /** Forgets the in-memory state (after a rollback); it is reloaded from the database when next needed. */
  reset(): void {
    this.heads = null;
    this.order = null;
    this.lastCycleT = null;
    this.openHourValue = null;
    this.strings.load();
  }

  private write(write: CycleWrite, t: number, heads: Map<string, Head>): void {
    const c = write.cycle;
    const s = this.s;
    s.insertCycle.run(t, c.durationMs, c.requests, c.outcome, c.errorCode, c.error, c.boxes, c.detailsFetched);

    const seen = new Set<number>();
    if (c.outcome === 'ok') {
      for (const snap of write.seen) {
        let head = heads.get(snap.serial);
        if (head === undefined) {
          const id = Number(
            s.insertBox.run(snap.serial, snap.id, snap.name, snap.connected ? 1 : 0, snap.battery, snap.signal, snap.firmware, snap.lastSeen,
              snap.registeredAt, snap.location, snap.ip, snap.detailsAt, t, t, t).lastInsertRowid,
          );
          head = { id, serial: snap.serial, segStart: null, lastObs: null, values: null, ref: null, state: polledState(snap, t, t), forgotten: false };
          heads.set(snap.serial, head);
          this.order = null;
        }
        this.observe(head, this.valuesOf(snap), t);
        s.updateBox.run(snap.id, snap.name, snap.connected ? 1 : 0, snap.battery, snap.signal, snap.firmware, snap.lastSeen,
          snap.registeredAt, snap.location, snap.ip, snap.detailsAt, t, head.segStart, head.id);
        head.state = polledState(snap, head.state.firstSeen, t);
        head.forgotten = false; // listed again: back in the fleet
        seen.add(head.id);
      }
    }
    // Every other open segment ends at this cycle (the box was not polled: failed cycle or absent).
    for (const head of heads.values()) {
      if (head.segStart === null || seen.has(head.id)) continue;
      this.closeSegment(head, Math.min(t, (head.lastObs as number) + this.maxGapMs));
      s.closeSegment.run(head.id);
    }
    if (c.outcome === 'ok') {
      for (const serial of write.missing) {
        s.markMissing.run(t, serial);
        const head = heads.get(serial);
        if (head !== undefined && head.state.missingSince === null) head.state = { ...head.state, missingSince: t };
      }
    }

    const hour = hourOf(t);
    if (this.openHourValue === null || hour > this.openHourValue) {
      for (const head of heads.values()) {
        if (head.ref !== null && head.ref.hour < hour) {
          this.superseded.push(head.ref);
          head.ref = null;
        }
      }
      this.openHourValue = hour;
    }
    for (const ref of this.dirty) s.upsertSample.run(ref.hour, ref.id, encodeRow(ref.row));
    const polls = new Map<string, number>();
    for (const ref of this.superseded) this.writeRollup(hourStats(s, ref.row, ref.hour, polls), ref.id);
  }

  /** The box was in the device list at cycle t with these values. */
  private observe(head: Head, values: Values, t: number): void {
    if (head.segStart !== null) {
      const last = head.lastObs as number;
      if (t - last <= this.maxGapMs) this.extendSegment(head, t);
      else this.closeSegment(head, last + this.maxGapMs);
    }
    const ref = this.rowFor(head, hourOf(t));
    if (head.segStart === null) head.segStart = t;
    if (addObservation(ref.row, t - ref.hour * HOUR_MS, head.values, values)) this.dirty.add(ref);
    head.values = values;
    head.lastObs = t;
  }

  /** Carries an open segment across hour boundaries up to t: the old hour is covered to its end. */
  private extendSegment(head: Head, t: number): void {
    const target = hourOf(t);
    while (head.ref !== null && head.ref.hour < target) {
      const ref = head.ref;
      const t0 = ref.hour * HOUR_MS;
      ref.row.pieces.push({ start: Math.max(head.segStart as number, t0) - t0, end: HOUR_MS });
      this.dirty.add(ref);
      const next = this.rowFor(head, ref.hour + 1);
      addObservation(next.row, 0, head.values, head.values as Values);
    }
  }

  /** Ends the open segment of a box at `end`, writing its pieces into every hour it reaches. */
  private closeSegment(head: Head, end: number): void {
    const segStart = head.segStart as number;
    for (;;) {
      const ref = head.ref;
      if (ref === null) break; // cannot happen: an open segment always has a row
      const t0 = ref.hour * HOUR_MS;
      const start = Math.max(segStart, t0) - t0;
      this.dirty.add(ref);
      if (end <= t0 + HOUR_MS) {
        ref.row.pieces.push({ start, end: end - t0 });
        break;
      }
      ref.row.pieces.push({ start, end: HOUR_MS });
      const next = this.rowFor(head, ref.hour + 1);
      addObservation(next.row, 0, head.values, head.values as Values);
    }
    head.segStart = null;
  }

  /** The box's row for `hour`, creating it (and retiring the previous one) if needed. */
  private rowFor(head: Head, hour: number): RowRef {
    if (head.ref !== null && head.ref.hour === hour) return head.ref;
    if (head.ref !== null) this.superseded.push(head.ref);
    head.ref = { id: head.id, hour, row: emptyRow() };
    this.dirty.add(head.ref);
    return head.ref;
  }

  private writeRollup(st: HourStats, boxId: number): void {
    const milli = (v: number | null): number | null => (v === null ? null : Math.round(v * 1000));
    this.s.upsertRollup.run(
      boxId, st.hour, st.polls, st.observedMs, st.observedMs - st.connectedMs,
      st.observedMs - st.battery.ms, st.battery.min, st.battery.max, milli(st.battery.mean),
      st.observedMs - st.signal.ms, st.signal.min, st.signal.max, milli(st.signal.mean),
    );
  }

  private valuesOf(snap: BoxSnapshot): Values {
    return [snap.battery, snap.signal, snap.connected ? 1 : 0, this.strings.intern(snap.firmware)];
  }

  /** Write-path state, loaded from the database on first use (and after a rollback). */
  private load(): Map<string, Head> {
    if (this.heads !== null) return this.heads;
    const heads = new Map<string, Head>();
    const byId = new Map<number, Head>();
    for (const b of this.s.allBoxes.all() as BoxRow[]) {
      const head: Head = {
        id: b.id,
        serial: b.serial,
        segStart: b.seg_start,
        lastObs: b.last_polled,
        values: [b.battery, b.signal, b.connected, this.strings.intern(b.firmware)],
        ref: null,
        state: toBoxState(b),
        forgotten: b.forgotten_at !== null,
      };
      heads.set(b.serial, head);
      byId.set(b.id, head);
    }
    this.lastCycleT = this.s.maxCycle.get() as number | null;
    this.openHourValue = this.lastCycleT === null ? null : hourOf(this.lastCycleT);
    if (this.openHourValue !== null) {
      for (const r of this.s.samplesFrom.all(this.openHourValue) as { hour: number; box_id: number; data: Buffer }[]) {
        const head = byId.get(r.box_id);
        if (head !== undefined && (head.ref === null || head.ref.hour < r.hour)) head.ref = { id: r.box_id, hour: r.hour, row: decodeRow(r.data) };
      }
    }
    this.heads = heads;
    this.order = [...heads.values()]; // read in serial order
    return heads;
  }
}

/** The row of `boxes` that `updateBox` leaves for a box in the device list at cycle t. */
function polledState(snap: BoxSnapshot, firstSeen: number, t: number): BoxState {
  return {
    serial: snap.serial,
    id: snap.id,
    name: snap.name,
    connected: snap.connected,
    battery: snap.battery,
    signal: snap.signal,
    firmware: snap.firmware,
    lastSeen: snap.lastSeen,
    registeredAt: snap.registeredAt,
    location: snap.location,
    ip: snap.ip,
    detailsAt: snap.detailsAt,
    firstSeen,
    lastPolled: t,
    missingSince: null,
  };
}
