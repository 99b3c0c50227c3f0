/**
 * Routing and grouping of notifications.
 *
 * - `routes` says whether a notifier wants an intent (min_severity, optional rules and boxes).
 * - `fanOut` turns intents into one item per (notifier, intent): the rows of an outbox.
 * - `planGroups` batches pending items per notifier: a batch is ready once its oldest item is
 *   `group_wait` old, and then takes every pending item of that notifier (a site power cut is one
 *   message listing 40 boxes, not 40 messages).
 */
import { boxMatches, isFleetKey } from '../box-id.js';
import { matchesAny } from '../glob.js';
import type { NotificationIntent, Severity } from './types.js';
import { SEVERITY_RANK } from './types.js';

/** A notifier's selectors, from its configuration. */
export interface NotifierRoute {
  /** Only intents of this severity or higher (critical > warning > info). Default: all. */
  minSeverity?: Severity;
  /** Only these rule names (globs allowed). Empty or absent: all. */
  rules?: readonly string[];
  /**
   * Only boxes whose serial matches one of these globs. Empty or absent: all. Fleet-level alerts
   * (the gateway alerts, serial '') pass this selector: they concern every box.
   */
  boxes?: readonly string[];
}

/** True when the notifier wants this intent. */
export function routes(notifier: NotifierRoute, intent: Pick<NotificationIntent, 'severity' | 'rule' | 'serial'>): boolean {
  if (notifier.minSeverity !== undefined && SEVERITY_RANK[intent.severity] < SEVERITY_RANK[notifier.minSeverity]) return false;
  if (notifier.rules !== undefined && notifier.rules.length > 0 && !matchesAny(intent.rule, notifier.rules)) return false;
  if (notifier.boxes !== undefined && notifier.boxes.length > 0 && !isFleetKey(intent.serial) && !boxMatches(intent.serial, notifier.boxes)) return false;
  return true;
}

/** One intent addressed to one notifier. */
export interface RoutedIntent {
  notifier: string;
  intent: NotificationIntent;
  createdAt: number;
}

/** Every (notifier, intent) pair the notifiers' selectors allow, notifiers in the order given. */
export function fanOut(intents: readonly NotificationIntent[], notifiers: readonly (NotifierRoute & { name: string })[]): RoutedIntent[] {
  const out: RoutedIntent[] = [];
  for (const n of notifiers) for (const intent of intents) if (routes(n, intent)) out.push({ notifier: n.name, intent, createdAt: intent.createdAt });
  return out;
}

/** Items of one notifier that go out as one message. */
export interface Batch<T> {
  notifier: string;
  items: T[];
}

export interface GroupPlan<T> {
  /** Batches to send now, by notifier name order; items oldest first. */
  ready: Batch<T>[];
  /** Items that wait for their group_wait. */
  waiting: T[];
  /** When the next waiting batch becomes ready; null when nothing waits. */
  nextReadyAt: number | null;
}

/**
 * Plans which pending items go out now. Items are grouped per notifier; a notifier's group is
 * ready when `now - oldest.createdAt >= groupWaitMs`, and then includes all its items (newer ones
 * ride along). `maxItems` (default unlimited) splits a ready group into several batches.
 */
export function planGroups<T extends { notifier: string; createdAt: number }>(
  pending: readonly T[],
  now: number,
  groupWaitMs: number,
  options: { maxItems?: number } = {},
): GroupPlan<T> {
  const byNotifier = new Map<string, T[]>();
  for (const item of pending) {
    const list = byNotifier.get(item.notifier);
    if (list) list.push(item);
    else byNotifier.set(item.notifier, [item]);
  }
  const max = Math.max(1, options.maxItems ?? Number.POSITIVE_INFINITY);
  const ready: Batch<T>[] = [];
  const waiting: T[] = [];
  let nextReadyAt: number | null = null;
  for (const notifier of [...byNotifier.keys()].sort()) {
    const items = (byNotifier.get(notifier) as T[]).slice().sort((a, b) => a.createdAt - b.createdAt);
    const oldest = (items[0] as T).createdAt;
    if (now - oldest >= groupWaitMs) {
      for (let i = 0; i < items.length; i += max) ready.push({ notifier, items: items.slice(i, i + max) });
    } else {
      waiting.push(...items);
      const at = oldest + groupWaitMs;
      nextReadyAt = nextReadyAt === null ? at : Math.min(nextReadyAt, at);
    }
  }
  return { ready, waiting, nextReadyAt };
}
