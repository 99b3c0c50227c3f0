/**
 * The write path of the fleet history, for every database: one poll cycle at a time becomes a
 * plan of rows (`cycles`, `boxes`, `samples`: compact hour rows of codec.ts, and the hour rows
 * that closed, to be rolled up), which the store applies in the cycle's transaction
 * (src/store/sqlite/history.ts, src/store/postgres/history.ts). The writer reads nothing itself:
 * the store loads its state once (`load`), so the same code serves a synchronous and an
 * asynchronous database. How time coverage works:
 *
 * - A value observed at a poll holds until the next poll attempt (ok or failed), but at most
 *   `maxGapMs`. Consecutive polls in which a box was listed form a segment; a failed cycle, a
 *   cycle without the box, or a pause longer than `maxGapMs` ends it. Outside segments there is
 *   no data (a gap).
 * - Each box has one row per hour it was covered in: the covered pieces of the hour and the value
 *   changes, first event full so that every row decodes on its own. The open hour's rows are kept
 *   in memory and written when they change; the open segment's start lives in the box's row of
 *   `boxes` (written when it changes: `ListedBoxWrite.changed`), its last poll is the account's
 *   latest cycle (`HistoryPlan.seen`).
 * - Each account's cycles cover only that account's boxes, in whatever order the accounts'
 *   cycles come. When an account's first cycle of a new hour is recorded, its boxes' rows of the
 *   previous hours are final: the plan lists them (`closedHours`) and the store writes their
 *   rollups. The open hour is thus per account (the store loads each box's rows from its account's,
 *   for the accounts still polled: `openHoursOf`, retention.ts).
 * - An account removed from the configuration has no next cycle to close its hour: the cycle that
 *   retires it (the first configured account's, src/alerts/pipeline.ts) closes it (`retire`): its
 *   boxes' open segments end and their open hours' rollups are written.
 * - Each account's cycle times only move forward. When the wall clock stepped back (NTP
 *   correction, VM restore) a cycle is recorded 1 ms after the account's previous one instead of
 *   being refused, and the caller is told by how much the clock was behind (it logs and counts
 *   it). This holds across restarts: each account's previous cycle is loaded from the database.
 *   Other accounts' cycles do not move it: two accounts' cycles may start in the same millisecond
 *   (cycles are keyed by account and start).
 * - Box ids and firmware string ids: on SQLite (one writer per file) they are counted here, so a
 *   plan needs no answer from the database. On PostgreSQL several processes may write one
 *   database (replicas, each leading its accounts): the store asks the database for them first
 *   (`newSerials`, `newStrings`, `addStrings`) and passes the box ids to `record`. When another
 *   process recorded one of the accounts meanwhile (a replica led it), the store replaces that
 *   account's part of the state (`loadAccount`); the rest stays.
 * - The writer also holds every box's row of `boxes` as it wrote it, and whether the box is
 *   forgotten (`markForgotten`), so that `fleet()` answers the fleet without reading it back
 *   after each write. It is this process's view: when another connection commits (a CLI
 *   `box forget`, `ack`, `silence`), the SQLite store calls `reset()` and it is read again.
 *
 * If the transaction that applies a plan rolls back, the store calls `reset()`: the in-memory
 * state is dropped and loaded again before the next cycle.
 */
import { DEFAULT_ACCOUNT } from '../../box-id.js';
import type { BoxSnapshot } from '../../domain/model.js';
import { HOUR_MS, addObservation, decodeRow, emptyRow, encodeRow, hourOf, type HourRow, type Values } from '../codec.js';
import type { BoxState, CycleRecord, CycleWrite, RecordedCycle } from '../../domain/store.js';
import { hourStats, pollCounter, rollupValues, toBoxState, type BoxRow, type SampleRow } from './rows.js';

/** What the writer needs from the database, read once (and again after a rollback). */
export interface WriterState {
  /** Every box row, by serial (byte order: SQLite's BINARY, PostgreSQL's "C"). */
  boxes: readonly BoxRow[];
  /** Start of the latest cycle of each account (absent: the account has none). */
  lastCycles: readonly { account: string; t: number }[];
  /** The sample rows of each box's account's open hour and later (`openHoursOf(lastCycles, rawMs)`, retention.ts); more are ignored. */
  openRows: readonly SampleRow[];
  /** Every interned string (firmware versions). */
  strings: readonly { id: number; value: string }[];
}

/** One account's part of WriterState (CycleWriter.loadAccount). */
export interface AccountState {
  account: string;
  /** The account's box rows. */
  boxes: readonly BoxRow[];
  /** Start of the account's latest cycle, or null. */
  lastCycle: number | null;
  /** The sample rows of the account's boxes of the hour of `lastCycle` and later. */
  openRows: readonly SampleRow[];
  /** Every interned string (firmware versions). */
  strings: readonly { id: number; value: string }[];
}

/** One box's row values as a cycle writes them. */
export interface BoxWrite {
  id: number;
  snap: BoxSnapshot;
  /** Start of the box's open segment after this cycle. */
  segStart: number | null;
}

/** A box listed by a cycle: its row's values, and whether they differ from the stored row. */
export interface ListedBoxWrite extends BoxWrite {
  /**
   * False: the row holds these values already (the snapshot's columns and `seg_start` as stored,
   * not missing, not forgotten): only its last poll moves to the cycle's start.
   */
  changed: boolean;
}

/** A box seen for the first time: its row's values and the account it belongs to (the cycle's). */
export interface NewBoxWrite extends BoxWrite {
  account: string;
}

/** Everything one cycle writes, in the order to write it. */
export interface HistoryPlan {
  recorded: RecordedCycle;
  /** The cycle row (startedAt as recorded). */
  cycle: CycleRecord;
  /** New interned strings. */
  strings: { id: number; value: string }[];
  /** Boxes seen for the first time (inserted with first_seen = last_polled = the cycle's start). */
  newBoxes: NewBoxWrite[];
  /**
   * Every box listed this cycle (the new ones too): its row's values, last polled at the cycle's
   * start, no longer missing or forgotten. After the cycle these are exactly the account's boxes
   * with an open segment (`seg_start` set): every other open segment of the account ends. So the
   * last poll of a box in its open segment is its account's latest cycle: a store may keep it
   * there rather than in each row (SQLite does, docs/storage.md).
   */
  seen: ListedBoxWrite[];
  /** Boxes whose open segment ended this cycle (seg_start becomes NULL), with their last poll. */
  closed: { id: number; lastPolled: number }[];
  /** Serials absent from the list: `missing_since` set to the cycle's start unless already set. */
  missing: string[];
  /** Sample rows to insert or replace. */
  samples: SampleRow[];
  /** Rows of hours that became final: the store writes a rollup of each (polls counted among its account's cycles). */
  closedHours: { boxId: number; account: string; hour: number; row: HourRow }[];
}

/**
 * What closing the open hours of retired accounts writes (CycleWriter.retire), in the order to
 * write it: their boxes' open segments ended, their rows, and the rollups of their open hours.
 */
export type ClosingPlan = Pick<HistoryPlan, 'closed' | 'samples' | 'closedHours'>;

/** Default longest pause between two polls that still counts as continuous observation (5 minutes). */
export const DEFAULT_MAX_GAP_MS = 5 * 60_000;

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
  /** The account the box belongs to: only that account's cycles observe it or end its segment. */
  account: string;
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
  /** The heads in serial order; null: sort them again (a box was added). */
  private order: Head[] | null = null;
  private strings = new Map<string, number>();
  private nextBoxId = 1;
  private nextStringId = 1;
  /** The latest recorded cycle of each account (its cycle times only move forward). */
  private lastOfAccount = new Map<string, number>();
  /** Strings interned while loading (a box's firmware not yet interned), written with the next plan. */
  private pendingStrings: { id: number; value: string }[] = [];
  /** Rows changed by the cycle being recorded. */
  private dirty = new Set<RowRef>();
  /** Rows of earlier hours replaced by a newer row during the cycle being recorded. */
  private superseded: RowRef[] = [];
  /** The box ids the database gave for the cycle being recorded (null: count them here). */
  private givenBoxIds: number[] | null = null;

  constructor(readonly maxGapMs: number) {
    if (!(maxGapMs > 0)) throw new RangeError('maxGapMs must be positive');
  }

  /** False before `load` and after `reset`: the store loads the state before the next `record`. */
  get loaded(): boolean {
    return this.heads !== null;
  }

  /** The start of each account's latest cycle (its open hour: rows of it and later may have no rollup yet). */
  lastCycles(): { account: string; t: number }[] {
    return [...this.lastOfAccount].map(([account, t]) => ({ account, t }));
  }

  load(state: WriterState): void {
    this.strings = new Map(state.strings.map((s) => [s.value, s.id]));
    this.nextStringId = Math.max(0, ...state.strings.map((s) => s.id)) + 1;
    this.nextBoxId = 1;
    this.lastOfAccount = new Map(state.lastCycles.map((c) => [c.account, c.t]));
    this.heads = new Map();
    this.pendingStrings = this.addHeads(state.boxes, state.openRows);
    this.order = [...this.heads.values()]; // loaded in serial order
  }

  /**
   * Replaces one account's part of the state (its boxes, their open rows, its latest cycle) with
   * what the database holds, the rest staying as it is: another process (a replica that led the
   * account meanwhile) recorded cycles of it since this writer did.
   */
  loadAccount(state: AccountState): void {
    const heads = this.heads;
    if (heads === null) throw new Error('CycleWriter.loadAccount before load');
    for (const [serial, head] of heads) if (head.account === state.account) heads.delete(serial);
    this.addStrings(state.strings);
    this.nextStringId = Math.max(this.nextStringId, ...state.strings.map((s) => s.id + 1));
    if (state.lastCycle === null) this.lastOfAccount.delete(state.account);
    else this.lastOfAccount.set(state.account, state.lastCycle);
    this.pendingStrings.push(...this.addHeads(state.boxes, state.openRows));
    this.order = null;
  }

  /**
   * Adds the heads of these box rows (with `lastOfAccount` set for their accounts): a box's open
   * row is its latest of its account's open hour or later (earlier ones have their rollup). Returns
   * the strings it had to intern (a firmware not yet interned), to be written with the next plan.
   */
  private addHeads(boxes: readonly BoxRow[], openRows: readonly SampleRow[]): { id: number; value: string }[] {
    const heads = this.heads as Map<string, Head>;
    const byId = new Map<number, Head>();
    for (const b of boxes) {
      const head: Head = {
        id: b.id,
        serial: b.serial,
        account: b.account,
        segStart: b.seg_start,
        lastObs: b.last_polled,
        values: null,
        ref: null,
        state: toBoxState(b),
        forgotten: b.forgotten_at !== null,
      };
      heads.set(b.serial, head);
      byId.set(b.id, head);
      this.nextBoxId = Math.max(this.nextBoxId, b.id + 1);
    }
    for (const r of openRows) {
      const head = byId.get(r.box_id);
      if (head === undefined || (head.ref !== null && head.ref.hour >= r.hour)) continue;
      const last = this.lastOfAccount.get(head.account);
      if (last !== undefined && r.hour >= hourOf(last)) head.ref = { id: r.box_id, hour: r.hour, row: decodeRow(r.data) };
    }
    // A box's last values are those of its row (interning a firmware not yet interned is a write).
    const pending: { id: number; value: string }[] = [];
    for (const b of boxes) (heads.get(b.serial) as Head).values = [b.battery, b.signal, b.connected, this.intern(b.firmware, pending)];
    return pending;
  }

  /** Start of the latest cycle of the account this writer recorded or loaded, or null. */
  lastCycleOf(account: string): number | null {
    return this.lastOfAccount.get(account) ?? null;
  }

  /** Serials of a cycle's listed boxes this writer does not know yet (they get new ids), in list order. */
  newSerials(write: CycleWrite): string[] {
    const heads = this.heads;
    if (heads === null) throw new Error('CycleWriter.newSerials before load');
    return write.cycle.outcome === 'ok' ? write.seen.filter((b) => !heads.has(b.serial)).map((b) => b.serial) : [];
  }

  /** Firmware strings of a cycle not interned yet. */
  newStrings(write: CycleWrite): string[] {
    return write.cycle.outcome === 'ok' ? [...new Set(write.seen.map((b) => b.firmware))].filter((v) => !this.strings.has(v)) : [];
  }

  /** Strings interned by the database (written already): the writer uses their ids. */
  addStrings(strings: readonly { id: number; value: string }[]): void {
    for (const s of strings) this.strings.set(s.value, s.id);
  }

  /**
   * Plans one cycle: what to write, in one transaction, for the store to apply. `boxIds`: the ids
   * the database gave for the cycle's `newSerials`, in order (without it the writer counts them).
   */
  record(write: CycleWrite, boxIds?: readonly number[]): HistoryPlan {
    const heads = this.heads;
    if (heads === null) throw new Error('CycleWriter.record before load');
    const own = write.cycle.startedAt;
    const account = write.cycle.account ?? DEFAULT_ACCOUNT;
    // The account's cycle times only move forward: a start not after its previous cycle's (the
    // clock stepped back) is recorded just after it. Other accounts' cycles are not its timeline.
    const lastOwn = this.lastOfAccount.get(account);
    const behind = lastOwn !== undefined && own <= lastOwn;
    const startedAt = behind ? lastOwn + 1 : own;
    const recorded = { startedAt, clockBehindMs: behind ? lastOwn - own : 0 };
    const c = write.cycle;
    const plan: HistoryPlan = {
      recorded,
      cycle: { startedAt, durationMs: c.durationMs, requests: c.requests, outcome: c.outcome, errorCode: c.errorCode, error: c.error, boxes: c.boxes, detailsFetched: c.detailsFetched, account },
      strings: this.pendingStrings,
      newBoxes: [],
      seen: [],
      closed: [],
      missing: [],
      samples: [],
      closedHours: [],
    };
    this.pendingStrings = [];
    this.givenBoxIds = boxIds === undefined ? null : [...boxIds];
    try {
      this.write(write, account, startedAt, heads, plan, lastOwn);
      this.lastOfAccount.set(account, startedAt);
    } finally {
      this.dirty.clear();
      this.superseded = [];
      this.givenBoxIds = null;
    }
    return plan;
  }

  /**
   * Closes the open hours of `accounts` (no longer configured, retired by a cycle at `now`): each
   * of their boxes' open segment ends where the next cycle would have ended it (its last poll plus
   * the longest gap, at most `now`), and a rollup is planned for each of their rows not rolled up
   * yet. The rows stay the boxes' open ones: should an account come back within the hour, its
   * cycles go on writing them (and roll them up again when the hour closes). The store loads the
   * accounts' state first (PostgreSQL: `loadAccount`).
   */
  retire(accounts: readonly string[], now: number): ClosingPlan {
    const heads = this.heads;
    if (heads === null) throw new Error('CycleWriter.retire before load');
    const plan: ClosingPlan = { closed: [], samples: [], closedHours: [] };
    try {
      for (const head of heads.values()) {
        if (head.ref === null || !accounts.includes(head.account)) continue;
        if (head.segStart !== null) {
          const lastPolled = head.lastObs as number;
          this.closeSegment(head, Math.min(now, lastPolled + this.maxGapMs));
          plan.closed.push({ id: head.id, lastPolled });
        }
        for (const ref of [...this.superseded, head.ref as RowRef]) plan.closedHours.push({ boxId: ref.id, account: head.account, hour: ref.hour, row: ref.row });
        this.superseded = [];
      }
      plan.samples = samplesOf(this.dirty);
    } finally {
      this.dirty.clear();
      this.superseded = [];
    }
    return plan;
  }

  /**
   * The fleet (every box not forgotten) in serial order, as the store's table would give it; null
   * until this writer is loaded (then read the table).
   */
  fleet(): BoxState[] | null {
    const heads = this.heads;
    if (heads === null) return null;
    this.order ??= [...heads.values()].map((h) => ({ h, key: Buffer.from(h.serial) })).sort((a, b) => Buffer.compare(a.key, b.key)).map((e) => e.h);
    const fleet: BoxState[] = [];
    for (const head of this.order) if (!head.forgotten) fleet.push(head.state);
    return fleet;
  }

  /** The store forgot these boxes (Store.forgetBoxes, in the same transaction): they leave fleet(). */
  markForgotten(serials: readonly string[]): void {
    for (const serial of serials) {
      const head = this.heads?.get(serial);
      if (head !== undefined) head.forgotten = true;
    }
  }

  /** Forgets the in-memory state (after a rollback); the store loads it again before the next cycle. */
  reset(): void {
    this.heads = null;
    this.order = null;
    this.lastOfAccount = new Map();
    this.pendingStrings = [];
  }

  /**
   * Plans the cycle of `account` at t, whose previous cycle was at `previous`. The work per box is
   * in methods of its own (`listed`, `endUnpolled`, `closeEarlierRow`), not in this method's loops:
   * V8 compiles a method with a hot loop in the middle of the loop (on-stack replacement) and again
   * whenever a later cycle takes a branch that compile had not seen.
   */
  private write(write: CycleWrite, account: string, t: number, heads: Map<string, Head>, plan: HistoryPlan, previous: number | undefined): void {
    if (write.cycle.outcome === 'ok') for (const snap of write.seen) plan.seen.push(this.listed(snap, account, t, heads, plan));
    // Every other open segment of the account ends at this cycle (the box was not polled: failed
    // cycle or absent); the other accounts' boxes are not this cycle's business.
    for (const head of heads.values()) this.endUnpolled(head, account, t, plan);
    if (write.cycle.outcome === 'ok') {
      for (const serial of write.missing) {
        plan.missing.push(serial);
        const head = heads.get(serial);
        if (head !== undefined && head.state.missingSince === null) head.state = { ...head.state, missingSince: t };
      }
    }

    // The account's first cycle of a new hour: its boxes' rows of earlier hours are final (a box
    // listed now was carried into this hour above). Only the account's own boxes: another account's
    // box may still have an open segment, which that account's next cycle carries or ends.
    const hour = hourOf(t);
    if (previous === undefined || hour > hourOf(previous)) for (const head of heads.values()) this.closeEarlierRow(head, account, hour);
    plan.samples = samplesOf(this.dirty);
    // Rows are only carried, ended and closed for the account's own boxes: every closed hour is the account's.
    for (const ref of this.superseded) plan.closedHours.push({ boxId: ref.id, account, hour: ref.hour, row: ref.row });
  }

  /** A box in the device list of the account's cycle at t: observed, and its row of `boxes` as the cycle leaves it. */
  private listed(snap: BoxSnapshot, account: string, t: number, heads: Map<string, Head>, plan: HistoryPlan): ListedBoxWrite {
    let head = heads.get(snap.serial);
    if (head === undefined) {
      head = { id: this.newBoxId(), serial: snap.serial, account, segStart: null, lastObs: null, values: null, ref: null, state: polledState(snap, account, t, t), forgotten: false };
      heads.set(snap.serial, head);
      this.order = null;
      plan.newBoxes.push({ id: head.id, snap, segStart: t, account });
    }
    const segStart = head.segStart;
    this.observe(head, [snap.battery, snap.signal, snap.connected ? 1 : 0, this.intern(snap.firmware, plan.strings)], t);
    const changed = head.segStart !== segStart || head.forgotten || !sameRow(head.state, snap);
    head.state = polledState(snap, account, head.state.firstSeen, t);
    head.forgotten = false; // listed again: back in the fleet
    return { id: head.id, snap, segStart: head.segStart, changed };
  }

  /** Ends the open segment of a box of `account` not polled by its cycle at t (a box listed by it was observed at t: cycle times only move forward). */
  private endUnpolled(head: Head, account: string, t: number, plan: HistoryPlan): void {
    if (head.segStart === null || head.lastObs === t || head.account !== account) return;
    const lastPolled = head.lastObs as number;
    this.closeSegment(head, Math.min(t, lastPolled + this.maxGapMs));
    plan.closed.push({ id: head.id, lastPolled });
  }

  /** At the first cycle of `account` in `hour`: the box's row of an earlier hour is final. */
  private closeEarlierRow(head: Head, account: string, hour: number): void {
    if (head.account === account && head.ref !== null && head.ref.hour < hour) {
      this.superseded.push(head.ref);
      head.ref = null;
    }
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
    // Values equal to the last ones keep the array the head holds: a new one per box and cycle
    // would outlive the cycle (promoted, then collected by a full garbage collection).
    if (addObservation(ref.row, t - ref.hour * HOUR_MS, head.values, values)) {
      this.dirty.add(ref);
      head.values = values;
    }
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

  /** The id of a box seen for the first time. */
  private newBoxId(): number {
    if (this.givenBoxIds === null) return this.nextBoxId++;
    const id = this.givenBoxIds.shift();
    if (id === undefined) throw new Error('CycleWriter.record: fewer box ids than new boxes');
    return id;
  }

  /** The id of an interned string; a new one is added to `out` (written with the plan). */
  private intern(value: string, out: { id: number; value: string }[]): number {
    const known = this.strings.get(value);
    if (known !== undefined) return known;
    const id = this.nextStringId++;
    this.strings.set(value, id);
    out.push({ id, value });
    return id;
  }
}

/**
 * The sample rows to write for these hour rows. Made by Array.from, not pushed one by one onto an
 * empty array: V8's optimized push onto a new empty array deoptimizes at the first row, cycle
 * after cycle.
 */
function samplesOf(refs: Iterable<RowRef>): SampleRow[] {
  return Array.from(refs, sampleRow);
}

/**
 * The sample row of one hour row. A module function, not an arrow made per call: V8 drops the
 * optimized code of a function once every closure holding it is garbage, as a cycle's closures
 * are by the next cycle, and compiles it again.
 */
function sampleRow(ref: RowRef): SampleRow {
  return { hour: ref.hour, box_id: ref.id, data: encodeRow(ref.row) };
}

/**
 * The row of `boxes` that a cycle at t leaves for a box in the device list: the snapshot's own
 * fields (a caller's object may carry more), copied once.
 */
function polledState(snap: BoxSnapshot, account: string, firstSeen: number, t: number): BoxState {
  return {
    serial: snap.serial, account, id: snap.id, name: snap.name, connected: snap.connected, battery: snap.battery, signal: snap.signal, firmware: snap.firmware,
    lastSeen: snap.lastSeen, registeredAt: snap.registeredAt, location: snap.location, ip: snap.ip, detailsAt: snap.detailsAt,
    firstSeen, lastPolled: t, missingSince: null,
  };
}

/**
 * True when the row of `boxes` that `state` is (as last written) holds the snapshot's values
 * already and the box is not missing: writing the snapshot would change only `last_polled`.
 */
function sameRow(state: BoxState, snap: BoxSnapshot): boolean {
  return (
    state.missingSince === null && state.id === snap.id && state.name === snap.name && state.connected === snap.connected && state.battery === snap.battery &&
    state.signal === snap.signal && state.firmware === snap.firmware && state.lastSeen === snap.lastSeen && state.registeredAt === snap.registeredAt &&
    state.location === snap.location && state.ip === snap.ip && state.detailsAt === snap.detailsAt
  );
}

/** The values of a box row's snapshot columns, in BOX_COLUMNS order (SQLite's per-cycle update passes the same values one by one: `updateBox`, src/store/sqlite/writer.ts). */
export function boxValues(snap: BoxSnapshot): (number | string | null)[] {
  return [snap.id, snap.name, snap.connected ? 1 : 0, snap.battery, snap.signal, snap.firmware, snap.lastSeen, snap.registeredAt, snap.location, snap.ip, snap.detailsAt];
}

/** The `boxes` columns a snapshot fills (boxValues gives their values). */
export const BOX_COLUMNS = ['gateway_id', 'name', 'connected', 'battery', 'signal', 'firmware', 'last_seen', 'registered_at', 'location', 'ip', 'details_at'] as const;

/**
 * The distinct accounts and hours a plan's rollups cover: the store reads their cycle starts (the
 * account's `cycles` in [h, h + 1 hour)) for the poll counts.
 */
export function closedHoursOf(plan: Pick<HistoryPlan, 'closedHours'>): { account: string; hours: number[] }[] {
  const byAccount = new Map<string, Set<number>>();
  for (const c of plan.closedHours) {
    let hours = byAccount.get(c.account);
    if (hours === undefined) byAccount.set(c.account, (hours = new Set()));
    hours.add(c.hour);
  }
  return [...byAccount].map(([account, hours]) => ({ account, hours: [...hours].sort((a, b) => a - b) }));
}

/**
 * The rollup rows of a plan's closed hours (values in ROLLUP_COLUMNS order), given each account's
 * cycle starts of those hours, ascending.
 */
export function rollupsOf(plan: Pick<HistoryPlan, 'closedHours'>, cycleStarts: ReadonlyMap<string, readonly number[]>): (number | null)[][] {
  const counters = new Map([...cycleStarts].map(([account, starts]) => [account, pollCounter(starts)]));
  const none = pollCounter([]);
  return plan.closedHours.map((c) => rollupValues(c.boxId, hourStats(c.row, c.hour, counters.get(c.account) ?? none)));
}
