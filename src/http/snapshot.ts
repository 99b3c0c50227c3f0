/**
 * The fleet as of the last recorded poll cycle, read from the store once per cycle. /metrics and
 * the heavy API answers are rendered from it at most once per cycle, however many clients ask in
 * between; a request never reads or renders the whole fleet while a newer answer would be the
 * same. A new cycle row in the store (recorded by this process or any other) starts a new
 * snapshot: the check is one indexed lookup of the latest cycle.
 */
import type { BoxState, Store } from '../store/types.js';

export interface FleetSnapshot {
  /** Every box as of the last cycle: the same array until the next cycle is recorded. */
  boxes(): Promise<BoxState[]>;
  /** `compute(boxes)` once per cycle, remembered under `key` until the next cycle. */
  memo<T>(key: string, compute: (boxes: BoxState[]) => T): Promise<T>;
  /**
   * The boxes as the cycle that started at `startedAt` committed them (the daemon has read them
   * for the alert rules already): the next snapshot without reading the store again.
   */
  publish(startedAt: number, boxes: BoxState[]): void;
}

export function fleetSnapshot(store: Pick<Store, 'boxes' | 'lastCycle'>): FleetSnapshot {
  let version: number | null | undefined;
  let boxes: BoxState[] = [];
  const memos = new Map<string, unknown>();
  const current = async (): Promise<BoxState[]> => {
    const latest = (await store.lastCycle())?.startedAt ?? null;
    if (latest !== version) {
      const list = await store.boxes();
      version = latest;
      boxes = list;
      memos.clear();
    }
    return boxes;
  };
  return {
    boxes: current,
    publish(startedAt, list) {
      version = startedAt;
      boxes = list;
      memos.clear();
    },
    async memo<T>(key: string, compute: (boxes: BoxState[]) => T): Promise<T> {
      const list = await current();
      if (!memos.has(key)) memos.set(key, compute(list));
      return memos.get(key) as T;
    },
  };
}
