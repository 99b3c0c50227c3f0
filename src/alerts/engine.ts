/**
 * One alert-engine cycle: pure and deterministic. Given the alerts as they were, this cycle's
 * rule evaluations and the context (time, gateway health, silences, inhibition, repeat interval),
 * returns the new alerts, the transitions to record and the notifications to send.
 *
 * Order of work: every alert is stepped first; inhibition is then computed from the new states
 * (so a box that disconnects and runs low on battery in the same cycle has its battery alert held
 * back); finally each alert is reconciled with what people were last told (notifyStep).
 */
import { isFleetKey } from '../box-id.js';
import { BoxwatchError } from '../errors.js';
import { ackInEffect, type Ack } from './acks.js';
import { holdBack, type HoldBackContext } from './hold-back.js';
import type { Timing } from './state.js';
import { alertState, initialState, isAtRest, notifyStep, step, timingOf } from './state.js';
import type { AlertRuleRef, AlertState, Condition, NotificationIntent, RuleEvaluation, Severity, Transition } from './types.js';
import { alertKey, alertRuleRef } from './types.js';

/**
 * `gatewayDown`: the cycle failed (gateway unreachable, unauthorized, bad responses): every per-box
 * condition is treated as unknown, so no per-box alert changes state, and nothing per-box is
 * notified. Fleet-level alerts (serial '') are evaluated as usual. The other fields of
 * HoldBackContext (silences, inhibition) are the hold-back stage's (src/alerts/hold-back.ts).
 */
export interface CycleContext extends HoldBackContext {
  /** `alerting.repeat_interval`; 0: never repeat. */
  repeatIntervalMs: number;
  /** The latest ack of each alert, by key: one in effect stops the alert's repeats (src/alerts/acks.ts). */
  acks?: ReadonlyMap<string, Ack>;
  /**
   * Every configured rule name, built-ins included. When given, alerts of rules that are no longer
   * configured are retired: resolved at once (and notified if their firing was), then dropped.
   * When omitted, alerts without an evaluation are simply left unchanged (unknown).
   */
  ruleNames?: Iterable<string>;
  /**
   * Serials of the fleet (forgotten boxes excluded). When given, alerts of any other box are
   * retired like those of a removed rule: the box was forgotten (boxwatch box forget, forget_after).
   */
  serials?: Iterable<string>;
}

export interface CycleResult {
  /** Alerts that are not at rest, by key, in key order. An absent key means inactive. */
  states: Map<string, AlertState>;
  /** State changes of this cycle, in key order. */
  transitions: Transition[];
  /** Notifications to route and group, in key order. */
  notifications: NotificationIntent[];
  /** Keys present in `prev` and absent from `states` (came to rest: delete their rows). */
  dropped: string[];
}

const RETIRE: Timing = { forMs: 0, keepFiringForMs: 0, forCycles: 1 };

/** Runs one cycle of the alert engine. Throws if `results` holds two evaluations of one alert. */
export function evaluateCycle(prev: ReadonlyMap<string, AlertState>, results: readonly RuleEvaluation[], ctx: CycleContext): CycleResult {
  const { now } = ctx;
  const byKey = new Map<string, RuleEvaluation>();
  for (const ev of results) {
    const key = alertKey(ev.rule.name, ev.serial);
    if (byKey.has(key)) throw new BoxwatchError('alerts_duplicate_evaluation', `two evaluations of rule "${ev.rule.name}" for box "${ev.serial}" in one cycle`);
    byKey.set(key, ev);
  }
  const configured = ctx.ruleNames === undefined ? undefined : new Set(ctx.ruleNames);
  // The fleet's serials as a set only when an alert has no evaluation (its rule or box may be
  // gone): an alert not at rest is evaluated every cycle while its rule and box are there.
  let fleet: Set<string> | undefined;
  const inFleet = (serial: string): boolean => ctx.serials === undefined || (fleet ??= new Set(ctx.serials)).has(serial);
  // An alert without a previous state that is not active this cycle stays at rest: skip it (the
  // common case by far: most boxes are fine most of the time).
  const work: string[] = [...prev.keys()];
  for (const [key, ev] of byKey) if (!prev.has(key) && ev.condition === 'active' && !(ctx.gatewayDown && !isFleetKey(ev.serial))) work.push(key);
  const keys = work.sort();

  // 1. Step every alert.
  const stepped = new Map<string, AlertState>();
  const transitionOf = new Map<string, Transition>();
  for (const key of keys) {
    const ev = byKey.get(key);
    const before = prev.get(key);
    let state: AlertState;
    let condition: Condition;
    let timing: Timing;
    if (ev !== undefined) {
      const base = before ?? initialState(ev.rule, ev.serial, now);
      state = base.kind === ev.rule.kind && base.severity === ev.rule.severity ? base : alertState(base, { kind: ev.rule.kind, severity: ev.rule.severity });
      condition = ctx.gatewayDown && !isFleetKey(ev.serial) ? 'unknown' : ev.condition;
      timing = timingOf(ev.rule);
    } else {
      state = before as AlertState;
      const retired = (configured !== undefined && !configured.has(state.rule)) || (!isFleetKey(state.serial) && !inFleet(state.serial));
      condition = retired ? 'inactive' : 'unknown';
      timing = RETIRE;
    }
    // One shape of input, its optional fields present (undefined without an evaluation), so V8 compiles step() once.
    const input = { condition, now, value: ev?.value, threshold: ev?.threshold, summary: ev?.summary };
    const { next, transition } = step(state, input, timing);
    stepped.set(key, next);
    if (transition) transitionOf.set(key, transition);
  }

  // 2. Hold back (gateway down, silences, inhibition), judged on the new states.
  const heldBack = holdBack(stepped.values(), ctx);

  // 3. Annotate, notify.
  const states = new Map<string, AlertState>();
  const transitions: Transition[] = [];
  const notifications: NotificationIntent[] = [];
  for (const key of keys) {
    const state = stepped.get(key) as AlertState;
    const held = heldBack.get(key) ?? null;
    const transition = transitionOf.get(key);
    if (transition) transitions.push(held ? { ...transition, heldBack: held.reason, heldBy: held.by } : transition);
    const acked = ackInEffect(ctx.acks?.get(key), state, now);
    const { next, intent } = notifyStep(state, { now, heldBack: held !== null, repeatIntervalMs: ctx.repeatIntervalMs, acked });
    if (intent) notifications.push(intent);
    if (!isAtRest(next)) states.set(key, next);
  }
  const dropped = [...prev.keys()].filter((k) => !states.has(k)).sort();
  return { states, transitions, notifications, dropped };
}

/** Builds the `prev` map from stored rows (e.g. after a restart). */
export function statesFromRows(rows: Iterable<AlertState>): Map<string, AlertState> {
  const map = new Map<string, AlertState>();
  for (const row of rows) map.set(alertKey(row.rule, row.serial), row);
  return map;
}

/** A configured rule (Config['rules'][number] fits: durations already in ms) as the engine sees it. */
export function ruleRef(rule: { name: string; kind: string; severity: Severity; for: number; keepFiringFor: number }): AlertRuleRef {
  return alertRuleRef(rule.name, rule.kind, rule.severity, rule.for, rule.keepFiringFor);
}

/**
 * True when the alert (its previous state; undefined: at rest) is pending or firing: threshold
 * rules then judge by their clear level (hysteresis), e.g. a low battery stays active until above
 * `clear_above`.
 */
export function isActive(state: AlertState | undefined): boolean {
  return state?.status === 'pending' || state?.status === 'firing';
}
