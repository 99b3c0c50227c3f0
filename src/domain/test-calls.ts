/**
 * The test-calls repository: every attempt of a `test_calls:` entry (docs/calls.md, "Test
 * calls"), the daily caps counted on it, and each test call with what the call sync learnt of it.
 * An interface with plain data types; the SQLite implementation is sqlite/test-calls.ts (schema:
 * migrations/0010_test_calls.sql).
 */
import type { Awaitable } from '../awaitable.js';
import type { Severity } from '../vocabulary.js';

/**
 * `reserved`: a slot of the caps is taken and make-call is sent (or about to be; a process that
 * died here leaves it reserved: it keeps counting). `placed`: the gateway accepted the call.
 * `rejected`: make-call failed. `skipped`: no call was attempted (not counted).
 */
export type TestCallState = 'reserved' | 'placed' | 'rejected' | 'skipped';

export interface TestCallRecord {
  id: number;
  entry: string;
  serial: string;
  agentId: number;
  /** UTC day of `at`: the caps' day. */
  day: number;
  /** boxwatch's clock. */
  at: number;
  state: TestCallState;
  callId: string | null;
  reason: string | null;
}

/** A test call with the call as the call sync stored it (null fields: not seen yet). */
export interface TestCallWithCall extends TestCallRecord {
  callStatus: string | null;
  durationSec: number | null;
}

/** The calls an entry used on a day: the box's, and all boxes'. */
export interface CapUse {
  box: number;
  total: number;
}

export type Reservation = { ok: true; id: number; used: CapUse } | { ok: false; cap: 'per_box' | 'total'; used: CapUse };

/** An entry's daily caps. */
export interface DailyCaps {
  perBox: number;
  total: number;
}

/** The cap that `used` has reached (the box's first), or null while both allow one more call: the one cap check. */
export function capReached(used: CapUse, caps: DailyCaps): 'per_box' | 'total' | null {
  if (used.box >= caps.perBox) return 'per_box';
  if (used.total >= caps.total) return 'total';
  return null;
}

export interface TestCallsRepo {
  /**
   * In one IMMEDIATE transaction: counts the entry's test calls of `day` (of the box, and of all
   * boxes) and, if both are below their caps, writes the row of this call as `reserved`. `used`
   * includes the new call.
   */
  reserve(input: { entry: string; serial: string; agentId: number; day: number; at: number; caps: { perBox: number; total: number } }): Awaitable<Reservation>;
  /** The reserved call was accepted by the gateway. */
  placed(id: number, callId: string): Awaitable<void>;
  /** The reserved call's make-call failed (it keeps counting: whether it rang is not known for every error). */
  rejected(id: number, reason: string): Awaitable<void>;
  /** Records an attempt that placed no call (box not connected, cap reached), and why. */
  skipped(input: { entry: string; serial: string; agentId: number; day: number; at: number; reason: string }): Awaitable<void>;
  /** The calls the entry used on `day` (skipped attempts not counted). */
  used(entry: string, day: number, serial: string): Awaitable<CapUse>;
  /** Per box, its newest `perBox` test calls that are not skipped, newest first, with their calls. */
  recent(perBox: number): Awaitable<Map<string, TestCallWithCall[]>>;
  /** The test call's entry of each of these call ids that is one. */
  entriesOf(callIds: readonly string[]): Awaitable<Map<string, string>>;
  /** Deletes attempts older than `before`; returns how many. */
  prune(before: number): Awaitable<number>;
}

/** How a box's latest decided test call went: what `test_call_failed` judges. */
export interface TestCallVerdict {
  failed: boolean;
  entry: string;
  severity: Severity;
  /** The call's id (null when make-call failed). */
  callId: string | null;
  /** E.g. `completed within 15m`. */
  threshold: string;
  /** One line: what happened. */
  summary: string;
}
