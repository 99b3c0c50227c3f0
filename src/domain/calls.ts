/**
 * The calls repository: what call ingestion writes and what rules, CLI and HTTP read about calls.
 * An interface with plain data types, so that callers never depend on how calls are stored; the
 * SQLite implementation is sqlite/calls.ts (schema: migrations/0006_calls.sql).
 */
import type { Awaitable } from '../awaitable.js';


/** What is known of a call's recording: none, downloadable, in the archive, or gone. */
export type RecordingState = 'none' | 'available' | 'archived' | 'expired';

/** One call as stored. Times in ms since the epoch; destination never in clear unless configured. */
export interface CallRecord {
  callId: string;
  serial: string;
  agentId: number;
  status: string;
  direction: string;
  /** The gateway's clock. */
  startedAt: number;
  endedAt: number | null;
  durationSec: number | null;
  /** Keyed hash of the destination number (HMAC-SHA256, hex). */
  toHash: string;
  /** e.g. `+1415•••0123`. */
  toMasked: string;
  /** Only with calls.store_numbers. */
  toNumber: string | null;
  /** null until the call's details were read. */
  recording: RecordingState | null;
  /** Only with calls.store_transcripts. */
  transcript: string | null;
  variables: Record<string, string> | null;
}

/** A call as listed for people and programs. */
export interface ListedCall extends CallRecord {
  /** The `test_calls` entry that placed it (a test call); null for every other call. */
  testCall: string | null;
}

/** A call as read this cycle (from the list, or from its details when `detailsRead`). */
export interface CallObservation extends CallRecord {
  /** True when read through call details: recording, transcript and variables are known. */
  detailsRead: boolean;
  /** Final, and its details still have to be read (the caller decides, by configuration). */
  wantsDetails: boolean;
}

/** How far the call list has been read. */
export interface CallSyncState {
  /** Newest started_at (gateway clock) of the last complete read; null before the first. */
  highWater: number | null;
  /** Our clock: when the last complete read ended. */
  syncedAt: number | null;
  /** An unfinished read (request budget or an error stopped it), to be continued. */
  resume: { top: number; below: number; floor: number } | null;
}

export interface CallsWrite {
  /** The account whose call sync wrote it: the owner of the new rows and of the reading position. */
  account: string;
  now: number;
  /** New calls and calls whose status or details changed. */
  upserts: readonly CallObservation[];
  /** Calls still `initiated` whose status was read again and had not changed. */
  checked: readonly string[];
  sync: CallSyncState;
  /** A call `initiated` this long counts as stuck in the rollups. */
  stuckAfterMs: number;
}

/** Daily figures per box and agent. `day` is floor(started_at / 86400000) (UTC days). */
export interface CallRollup {
  day: number;
  serial: string;
  agentId: number;
  placed: number;
  completed: number;
  failed: number;
  stuck: number;
  talkSec: number;
}

/** Final calls (completed or failed) and the failed among them. */
export interface FailureCount {
  calls: number;
  failed: number;
}

/** Calls still `initiated`: how many, and when the oldest started (gateway clock). */
export interface StuckCalls {
  count: number;
  oldest: number;
}

/** The figures of `boxwatch calls stats` for one box or agent (`key`). */
export interface CallStats {
  /** The box id, or the agent's key: its id for the account `default`, else `ACCOUNT/ID` (each account's agents apart). */
  key: string;
  placed: number;
  completed: number;
  failed: number;
  /** Still `initiated` and started before `stuckBefore`. */
  stuck: number;
  /** Of the completed calls; null without any. */
  medianDurationSec: number | null;
  archived: number;
  /** Recordings that expired before they were archived. */
  lost: number;
  /** Of `placed`, the test calls (`test_calls:`). */
  test: number;
}

export interface CallsRepo {
  /** How far the account's call list has been read. */
  syncState(account: string): Awaitable<CallSyncState>;
  /** The stored status, recording state and details flag of the given calls (those known; ids as stored: src/box-id.ts `callKey`). */
  known(callIds: readonly string[]): Awaitable<Map<string, { status: string; recording: RecordingState | null }>>;
  /** Writes one cycle's observations, the reading position and the touched rollups, in one transaction. */
  write(write: CallsWrite): Awaitable<void>;
  /**
   * The account's calls to read through call details, at most `limit`: final calls whose details are due
   * (oldest end first), then calls still `initiated` started after `initiatedSince` and not read
   * since `checkedBefore` (least recently read first).
   */
  dueForDetails(limit: number, options: { account: string; checkedBefore: number; initiatedSince: number }): Awaitable<CallRecord[]>;
  /** Stored calls of the account started at or after `since` (gateway clock). */
  countSince(since: number, account: string): Awaitable<number>;
  /** Calls started in [since, until), newest first. */
  list(options: { serial?: string; since?: number; until?: number; limit: number }): Awaitable<ListedCall[]>;
  /** Per box or agent, the calls started at or after `since`, in key order. */
  stats(options: { since: number; by: 'box' | 'agent'; stuckBefore: number }): Awaitable<CallStats[]>;
  /** The box's final calls started in [from, to) per bucket of `bucketMs` (index 0 starts at `from`); empty buckets left out. */
  failureBuckets(serial: string, from: number, to: number, bucketMs: number): Awaitable<{ index: number; calls: number; failed: number }[]>;
  rollups(fromDay: number, toDay: number): Awaitable<CallRollup[]>;
  /**
   * Per box: the final calls that started at or after `since`; with `lastCalls`, only the box's
   * newest `lastCalls` of them.
   */
  failureCounts(options: { since: number; lastCalls?: number }): Awaitable<Map<string, FailureCount>>;
  /** Per box: calls still `initiated` that started in [startedAfter, startedBefore). */
  stuckCalls(startedBefore: number, startedAfter: number): Awaitable<Map<string, StuckCalls>>;
  /** Per box: when its newest stored call started. */
  lastCallAt(): Awaitable<Map<string, number>>;
  /** The boxes that placed calls on every day from `fromDay` to `toDay` (UTC days, inclusive). */
  dailyCallers(fromDay: number, toDay: number): Awaitable<Set<string>>;
  /** Deletes calls started before `callsBefore` and rollups of days before `rollupsBefore`; at most `maxRows`. */
  prune(callsBefore: number, rollupsBefore: number, maxRows?: number): Awaitable<number>;
}

export const DAY_MS = 86_400_000;

export function dayOf(t: number): number {
  return Math.floor(t / DAY_MS);
}
