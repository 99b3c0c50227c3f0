/**
 * The fleet as of the last recorded poll cycles, kept per account. /metrics and the heavy API
 * answers are rendered from it at most once per change, however many clients ask in between; a
 * request never reads or renders the whole fleet while a newer answer would be the same.
 *
 * Each account's part is the account's boxes (and, given where to read them, its alerts not at
 * rest: they change only with the account's cycles) as its latest cycle left them. A cycle of this
 * process publishes its accounts' parts (the daemon read them for the alert rules already); a
 * cycle stored by another process (a replica leading other accounts, or the daemon beside a CLI)
 * is seen at the next request: the latest cycle of each account (index probes, `lastCycles`)
 * says which accounts' parts were not built from it, and only those are read again; the others
 * stay. Starts are compared per account and for equality, never across accounts or processes:
 * another replica's cycle may start before this one's and commit after it. An account retired by
 * another replica (removed from `gateways:`) writes no cycle of its own: its part is read again
 * with the cycle that retired it (the first configured account's, `cycleScope`). So no process
 * reads the whole fleet once per cycle.
 */
import { boxesOfAccount, cycleScope, statesOfAccount } from '../alerts/pipeline.js';
import type { AlertState } from '../alerts/types.js';
import type { Awaitable } from '../awaitable.js';
import { accountOf, DEFAULT_ACCOUNT, fleetKey } from '../box-id.js';
import type { BoxState, Store } from '../domain/store.js';

/** Where the snapshot reads alert states: of one account, or all (AlertQueries.states). */
export type AlertStatesSource = (account?: string) => Awaitable<ReadonlyMap<string, AlertState>>;

export interface FleetSnapshot {
  /** Every box as of the last cycles: the same array until a part changes. */
  boxes(): Promise<BoxState[]>;
  /** Every alert not at rest as of the last cycles (empty when the snapshot was given no AlertStatesSource). */
  states(): Promise<ReadonlyMap<string, AlertState>>;
  /** A number that changes whenever the fleet or its alerts change (after reading what other processes stored). */
  version(): Promise<number>;
  /**
   * The boxes, the alerts and the version of one bringing up to date (one read of the latest
   * cycles): what the daemon's cycle hands on to its consumers, instead of asking three times.
   */
  view(): Promise<{ boxes: BoxState[]; states: ReadonlyMap<string, AlertState>; version: number }>;
  /** `compute(boxes)` once per change of the fleet, remembered under `key` until the next. */
  memo<T>(key: string, compute: (boxes: BoxState[]) => T): Promise<T>;
  /**
   * What a cycle of this process committed, that started at `startedAt`: `boxes` and `states` are
   * the boxes and the alerts not at rest of `accounts` (the cycle's own, and any it retired) as it
   * left them (`states` absent: their alerts as they were). Those accounts' parts are replaced
   * without reading the store; the others stay.
   */
  publish(startedAt: number, accounts: readonly string[], boxes: readonly BoxState[], states?: ReadonlyMap<string, AlertState>): void;
}

/** One account's boxes and alerts, as its cycle that started at `at` left them. */
interface Part {
  at: number;
  boxes: readonly BoxState[];
  states: ReadonlyMap<string, AlertState>;
}

const NO_STATES: ReadonlyMap<string, AlertState> = new Map();

export function fleetSnapshot(
  store: Pick<Store, 'boxes' | 'lastCycles'>,
  alertStates?: AlertStatesSource,
  /** The accounts of `gateways:` (their order: the first one's cycle retires the others); absent: parts are never retired. */
  configured?: readonly string[],
): FleetSnapshot {
  const parts = new Map<string, Part>();
  let read = false;
  let generation = 0;
  let merged: BoxState[] | null = null;
  let mergedStates: Map<string, AlertState> | null = null;
  const memos = new Map<string, unknown>();
  let refreshing: Promise<void> | null = null;

  const changed = (): void => {
    generation += 1;
    merged = null;
    mergedStates = null;
    memos.clear();
  };
  const readStates = async (account?: string): Promise<ReadonlyMap<string, AlertState>> => (alertStates === undefined ? NO_STATES : await alertStates(account));
  /** Reads the whole fleet the first time, then again only the accounts whose latest stored cycle their part was not built from. */
  const refresh = async (): Promise<void> => {
    const cycles = await store.lastCycles();
    const stored = new Map(cycles.map((c) => [c.account ?? DEFAULT_ACCOUNT, c.startedAt]));
    if (!read) {
      const fleet = await store.boxes();
      const states = await readStates();
      for (const account of new Set([...stored.keys(), ...fleet.map((b) => b.account), ...[...states.values()].map((st) => accountOf(st.serial))])) {
        // A part published meanwhile by this process's cycle is at least as new.
        if (!parts.has(account)) parts.set(account, { at: stored.get(account) ?? -Infinity, boxes: boxesOfAccount(fleet, account), states: statesOfAccount(states, account) });
      }
      read = true;
      changed();
      return;
    }
    const stale = [...stored].filter(([account, at]) => parts.get(account)?.at !== at).map(([account]) => account);
    // The cycle that retires removed accounts changed: their parts are read again too (empty once retired).
    if (configured !== undefined && stale.some((account) => cycleScope(configured, account).alsoNotIn !== undefined)) {
      for (const account of parts.keys()) if (!configured.includes(account) && !stale.includes(account)) stale.push(account);
    }
    if (stale.length === 0) return;
    for (const account of stale) {
      const before = parts.get(account);
      const boxes = await store.boxes(account);
      const states = await readStates(account);
      // A cycle of this process published meanwhile is newer than this read: it stays.
      if (parts.get(account) === before) parts.set(account, { at: stored.get(account) ?? -Infinity, boxes, states });
    }
    changed();
  };
  /** The parts, up to date with the store. One refresh at a time: concurrent requests wait for the same one. */
  const upToDate = async (): Promise<void> => {
    refreshing ??= refresh().finally(() => {
      refreshing = null;
    });
    await refreshing;
  };
  /** The boxes and the alerts of the parts as they are (after `upToDate`, in the same turn). */
  const boxesNow = (): BoxState[] => (merged ??= mergeParts(parts));
  const statesNow = (): ReadonlyMap<string, AlertState> => (mergedStates ??= new Map([...parts.values()].flatMap((p) => [...p.states])));
  const current = async (): Promise<BoxState[]> => {
    await upToDate();
    return boxesNow();
  };
  return {
    boxes: current,
    async version() {
      await upToDate();
      return generation;
    },
    async states() {
      await upToDate();
      return statesNow();
    },
    async view() {
      await upToDate();
      return { boxes: boxesNow(), states: statesNow(), version: generation };
    },
    publish(startedAt, accounts, boxes, states) {
      for (const account of accounts) {
        const kept = parts.get(account)?.states ?? NO_STATES;
        parts.set(account, { at: startedAt, boxes: boxesOfAccount(boxes, account), states: states === undefined ? kept : statesOfAccount(states, account) });
      }
      changed();
    },
    async memo<T>(key: string, compute: (boxes: BoxState[]) => T): Promise<T> {
      const list = await current();
      if (!memos.has(key)) memos.set(key, compute(list));
      return memos.get(key) as T;
    },
  };
}

/**
 * The parts' boxes in one list, by serial in the store's order (UTF-8 bytes, that is code
 * points), each part being in that order already. Another account's box ids all start with
 * `ACCOUNT/` (src/box-id.ts; an account name holds no '/'), so those parts follow one another in
 * the order of their prefixes; only the default account's bare serials fall among them.
 */
function mergeParts(parts: ReadonlyMap<string, Part>): BoxState[] {
  const prefixed = [...parts.keys()].filter((a) => a !== DEFAULT_ACCOUNT).sort((a, b) => compareCodePoints(fleetKey(a), fleetKey(b)));
  const others = prefixed.flatMap((a) => (parts.get(a) as Part).boxes);
  const bare = parts.get(DEFAULT_ACCOUNT)?.boxes ?? [];
  const all: BoxState[] = [];
  let i = 0;
  let j = 0;
  while (i < bare.length && j < others.length) {
    const a = bare[i] as BoxState;
    const b = others[j] as BoxState;
    if (compareCodePoints(a.serial, b.serial) <= 0) {
      all.push(a);
      i++;
    } else {
      all.push(b);
      j++;
    }
  }
  for (; i < bare.length; i++) all.push(bare[i] as BoxState);
  for (; j < others.length; j++) all.push(others[j] as BoxState);
  return all;
}

/**
 * Code point order of two strings (UTF-8 byte order, SQLite's BINARY and PostgreSQL's "C"):
 * UTF-16 unit order except that a surrogate (a code point above U+FFFF) sorts after U+E000..U+FFFF.
 */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const sx = x >= 0xd800 && x < 0xe000;
    const sy = y >= 0xd800 && y < 0xe000;
    return sx === sy ? x - y : sx ? 1 : -1;
  }
  return a.length - b.length;
}
