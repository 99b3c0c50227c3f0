/**
 * The alert state machine of one (rule, box), as pure functions of (state, input, now).
 *
 * - `step` moves the status: inactive -> pending -> firing -> resolved -> inactive.
 * - `notifyStep` decides, after inhibition and silences are known, whether the alert is notified
 *   now (firing, resolved or repeat) and records that in the state.
 *
 * Choices (see docs/alerting.md): `unknown` changes nothing at all, and the pending timer keeps
 * running through it (as in Prometheus, where a failed evaluation leaves `activeAt` alone): `for`
 * is wall time since the first active evaluation of the run, checked at the next active one.
 * Boundaries are inclusive: an alert fires when `now - activeSince >= for` and resolves when
 * `now - clearedSince >= keep_firing_for`.
 */
import type { AlertRuleRef, AlertState, AlertStatus, AlertValue, Condition, NotificationIntent, Transition } from './types.js';
import { alertKey } from './types.js';

/** Timing of one rule. */
export interface Timing {
  forMs: number;
  keepFiringForMs: number;
  /** Consecutive active evaluations needed to fire; default 1. */
  forCycles?: number;
}

/** One evaluation of one alert. */
export interface StepInput {
  condition: Condition;
  now: number;
  value?: AlertValue;
  threshold?: AlertValue;
  summary?: string | null;
}

/** The state of an alert that has never been active. */
export function initialState(rule: Pick<AlertRuleRef, 'name' | 'kind' | 'severity'>, serial: string, now: number): AlertState {
  return alertState({
    key: alertKey(rule.name, serial),
    rule: rule.name,
    kind: rule.kind,
    serial,
    severity: rule.severity,
    status: 'inactive',
    since: now,
    activeSince: null,
    activeCycles: 0,
    firingSince: null,
    clearedSince: null,
    resolvedAt: null,
    notifiedFiring: false,
    lastNotifiedAt: null,
    value: null,
    threshold: null,
    summary: null,
  });
}

/**
 * `s` with `changes` applied, as a new object. Every alert state the engine makes is built here,
 * its fields always in this order: V8 then sees one kind of alert state object, not one per
 * spread of a different set of changes (which would make it recompile the alert stage cycle
 * after cycle).
 */
export function alertState(s: AlertState, changes: Partial<AlertState> = {}): AlertState {
  const c = { ...s, ...changes };
  return {
    key: c.key,
    rule: c.rule,
    kind: c.kind,
    serial: c.serial,
    severity: c.severity,
    status: c.status,
    since: c.since,
    activeSince: c.activeSince,
    activeCycles: c.activeCycles,
    firingSince: c.firingSince,
    clearedSince: c.clearedSince,
    resolvedAt: c.resolvedAt,
    notifiedFiring: c.notifiedFiring,
    lastNotifiedAt: c.lastNotifiedAt,
    value: c.value,
    threshold: c.threshold,
    summary: c.summary,
  };
}

/** Timing of a rule reference. */
export function timingOf(rule: AlertRuleRef): Timing {
  return { forMs: rule.forMs, keepFiringForMs: rule.keepFiringForMs, forCycles: rule.forCycles ?? 1 };
}

/**
 * An alert with nothing to remember: inactive and owing no resolved notification. The engine
 * drops such alerts from its map (an absent key means inactive).
 */
export function isAtRest(state: AlertState): boolean {
  return state.status === 'inactive' && !state.notifiedFiring;
}

/**
 * Advances one alert by one evaluation. Returns the same object when nothing changed (an unknown
 * condition, or an evaluation that leaves every field as it was).
 */
export function step(alert: AlertState, input: StepInput, timing: Timing): { next: AlertState; transition?: Transition } {
  const { condition, now } = input;
  if (condition === 'unknown') return { next: alert };

  // The fields this evaluation sets, applied onto the alert only when one of them differs. Written
  // out in each object below: a spread followed by fields its source lacks takes V8's slow path,
  // and this runs for every alert that is not at rest, every cycle.
  const value = input.value === undefined ? alert.value : input.value;
  const threshold = input.threshold === undefined ? alert.threshold : input.threshold;
  const summary = input.summary === undefined ? alert.summary : input.summary;

  if (condition === 'active') {
    const fresh = alert.status === 'inactive' || alert.status === 'resolved';
    const activeSince = fresh ? now : (alert.activeSince ?? now);
    const activeCycles = fresh ? 1 : Math.min(alert.activeCycles + 1, timing.forCycles ?? 1);
    const run: Partial<AlertState> = { value, threshold, summary, activeSince, activeCycles, clearedSince: null };
    if (alert.status === 'firing') return sameOrNew(alert, run);
    const due = now - activeSince >= timing.forMs && activeCycles >= (timing.forCycles ?? 1);
    if (due) return move(alert, { ...run, firingSince: now, resolvedAt: null }, 'firing', now);
    if (alert.status === 'pending') return sameOrNew(alert, run);
    return move(alert, run, 'pending', now);
  }

  // condition === 'inactive'
  const cleared: Partial<AlertState> = { value, threshold, summary, activeCycles: 0 };
  switch (alert.status) {
    case 'inactive':
      return sameOrNew(alert, cleared);
    case 'pending':
      return move(alert, { ...cleared, activeSince: null }, 'inactive', now);
    case 'resolved':
      return move(alert, cleared, 'inactive', now);
    case 'firing': {
      const clearedSince = alert.clearedSince ?? now;
      if (now - clearedSince >= timing.keepFiringForMs) {
        return move(alert, { ...cleared, activeSince: null, clearedSince: null, resolvedAt: now }, 'resolved', now);
      }
      return sameOrNew(alert, { value, threshold, summary, activeCycles: 0, clearedSince });
    }
  }
}

/**
 * The alert itself when the evaluation changed none of its fields (an alert firing on with the same
 * value), else the alert with `changes`: an alert that stays as it was is the same object, and the
 * store writes nothing for it.
 */
function sameOrNew(alert: AlertState, changes: Partial<AlertState>): { next: AlertState } {
  for (const field of Object.keys(changes) as (keyof AlertState)[]) if (!Object.is(alert[field], changes[field])) return { next: alertState(alert, changes) };
  return { next: alert };
}

function move(prev: AlertState, changes: Partial<AlertState>, to: AlertStatus, now: number): { next: AlertState; transition: Transition } {
  const moved = alertState(prev, { ...changes, status: to, since: now });
  return {
    next: moved,
    transition: {
      key: moved.key,
      rule: moved.rule,
      kind: moved.kind,
      serial: moved.serial,
      severity: moved.severity,
      from: prev.status,
      to,
      at: now,
      value: moved.value,
      threshold: moved.threshold,
      summary: moved.summary,
      heldBack: null,
      heldBy: [],
    },
  };
}

/** What `notifyStep` needs besides the state. */
export interface NotifyInput {
  now: number;
  /** Silenced, inhibited or gateway down: nothing is notified now; what is owed waits. */
  heldBack: boolean;
  /** repeat_interval; 0 or less: never repeat. */
  repeatIntervalMs: number;
  /** An acknowledgement is in effect (src/alerts/acks.ts): no repeats; firing and resolve as usual. */
  acked?: boolean;
}

/**
 * Decides whether `state` is notified now, reconciling what people were last told with the
 * alert's status: a firing alert not yet announced gets `firing`; an announced alert that is no
 * longer firing gets `resolved`; an announced firing alert gets `repeat` every repeat interval,
 * unless acknowledged. Nothing is emitted while held back.
 */
export function notifyStep(state: AlertState, input: NotifyInput): { next: AlertState; intent?: NotificationIntent } {
  if (input.heldBack) return { next: state };
  const { now } = input;
  if (state.status === 'firing') {
    if (!state.notifiedFiring) {
      const next = alertState(state, { notifiedFiring: true, lastNotifiedAt: now });
      return { next, intent: intentOf(next, 'firing', now) };
    }
    const last = state.lastNotifiedAt ?? now;
    if (input.repeatIntervalMs > 0 && now - last >= input.repeatIntervalMs && input.acked !== true) {
      const next = alertState(state, { lastNotifiedAt: now });
      return { next, intent: intentOf(next, 'repeat', now) };
    }
    return { next: state };
  }
  if (state.notifiedFiring) {
    const next = alertState(state, { notifiedFiring: false });
    return { next, intent: intentOf(next, 'resolved', now) };
  }
  return { next: state };
}

/** The notification intent of `type` for an alert in state `s`. */
export function intentOf(s: AlertState, type: NotificationIntent['type'], now: number): NotificationIntent {
  return {
    key: s.key,
    rule: s.rule,
    kind: s.kind,
    serial: s.serial,
    severity: s.severity,
    type,
    createdAt: now,
    firingSince: s.firingSince,
    resolvedAt: type === 'resolved' ? (s.resolvedAt ?? now) : null,
    value: s.value,
    threshold: s.threshold,
    summary: s.summary,
  };
}
