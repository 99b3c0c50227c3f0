/** Small builders and a multi-cycle driver for the alert-engine tests. */
import type { CycleContext, CycleResult } from '../../src/alerts/engine.js';
import { evaluateCycle } from '../../src/alerts/engine.js';
import type { Silence } from '../../src/alerts/silences.js';
import type { AlertRuleRef, AlertState, AlertValue, Condition, NotificationIntent, RuleEvaluation, Transition } from '../../src/alerts/types.js';
import { FakeClock } from '../helpers/fake-clock.js';

export const T0 = Date.parse('2026-01-01T00:00:00Z');
export const SEC = 1000;
export const MIN = 60_000;
export const HOUR = 3_600_000;

/** A rule reference with defaults (for 0, keep_firing_for 0, warning). */
export function rule(name: string, kind: string, opts: Partial<AlertRuleRef> = {}): AlertRuleRef {
  return { name, kind, severity: 'warning', forMs: 0, keepFiringForMs: 0, ...opts };
}

export function ev(r: AlertRuleRef, serial: string, condition: Condition, value?: AlertValue, threshold?: AlertValue): RuleEvaluation {
  const e: RuleEvaluation = { rule: r, serial, condition };
  if (value !== undefined) e.value = value;
  if (threshold !== undefined) e.threshold = threshold;
  return e;
}

/** `firing battery-low SN-0001` — one word per notification, easy to compare in tables. */
export function describeIntent(n: NotificationIntent): string {
  return `${n.type} ${n.rule}${n.serial === '' ? '' : ` ${n.serial}`}`;
}

export function describeTransition(t: Transition): string {
  return `${t.rule}${t.serial === '' ? '' : ` ${t.serial}`} ${t.from}>${t.to}${t.heldBack ? ` (${t.heldBack})` : ''}`;
}

/** Drives the engine cycle by cycle on a FakeClock, keeping the states between cycles. */
export class Harness {
  readonly clock = new FakeClock(T0);
  states = new Map<string, AlertState>();
  silences: Silence[] = [];
  ctx: Omit<CycleContext, 'now' | 'silences'> = { gatewayDown: false, inhibit: true, repeatIntervalMs: 4 * HOUR };

  /** Runs one cycle at the clock's current time. */
  cycle(results: RuleEvaluation[], ctx: Partial<CycleContext> = {}): CycleResult {
    const r = evaluateCycle(this.states, results, { ...this.ctx, now: this.clock.now(), silences: this.silences, ...ctx });
    this.states = r.states;
    return r;
  }

  /** Advances the clock by `ms`, then runs one cycle; returns notifications and transitions as words. */
  after(ms: number, results: RuleEvaluation[], ctx: Partial<CycleContext> = {}): { notified: string[]; transitions: string[]; result: CycleResult } {
    this.clock.advance(ms);
    const result = this.cycle(results, ctx);
    return { notified: result.notifications.map(describeIntent), transitions: result.transitions.map(describeTransition), result };
  }

  status(key: string): string {
    return this.states.get(key)?.status ?? 'inactive';
  }
}
