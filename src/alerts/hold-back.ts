/**
 * The "hold back" stage of the pipeline, in one function: whether an alert is notified right now
 * or held back, and why. Three reasons, checked in this order:
 *
 * 1. `gateway_down`: the cycle brought no fresh per-box data, so nothing per-box is notified
 *    (fleet-level alerts, serial '', are never held back for this);
 * 2. `silenced`: an active silence matches the alert (src/alerts/silences.ts);
 * 3. `inhibited`: a firing source alert of the same box inhibits it (src/alerts/inhibit.ts).
 *
 * The engine calls it every cycle; `boxwatch alerts`, /api/alerts and `rules test` call it too,
 * so what they show is what the daemon decides.
 */
import { isFleetKey } from '../box-id.js';
import type { InhibitRule } from './inhibit.js';
import { DEFAULT_INHIBIT_RULES, inhibitedBy } from './inhibit.js';
import type { Silence } from './silences.js';
import { matchingSilences } from './silences.js';
import type { AlertState, HeldBackReason } from './types.js';

/** Why an alert is not notified now, and by what: silence ids, or the keys of inhibiting alerts. */
export interface HeldBack {
  reason: HeldBackReason;
  by: string[];
}

/** What holding back looks at. The engine's CycleContext is one. */
export interface HoldBackContext {
  now: number;
  /** The last cycle failed: per-box alerts have no fresh data. */
  gatewayDown: boolean;
  silences: readonly Silence[];
  /** `alerting.inhibit`. */
  inhibit: boolean;
  /** Default: disconnected holds back low_battery, weak_signal, stale and the call alerts of the same box (inhibit.ts). */
  inhibitRules?: readonly InhibitRule[];
}

/**
 * Every held-back alert among `states` (all of them: inhibition depends on the others), by key.
 * An alert absent from the result is notified as its state says.
 */
export function holdBack(states: Iterable<AlertState>, ctx: HoldBackContext): Map<string, HeldBack> {
  const all = [...states];
  const inhibited = ctx.inhibit ? inhibitedBy(all, ctx.inhibitRules ?? DEFAULT_INHIBIT_RULES) : new Map<string, string[]>();
  const result = new Map<string, HeldBack>();
  for (const state of all) {
    const held = heldBackOne(state, ctx, inhibited);
    if (held !== null) result.set(state.key, held);
  }
  return result;
}

function heldBackOne(state: AlertState, ctx: HoldBackContext, inhibited: ReadonlyMap<string, string[]>): HeldBack | null {
  if (ctx.gatewayDown && !isFleetKey(state.serial)) return { reason: 'gateway_down', by: [] };
  const silences = matchingSilences(state, ctx.silences, ctx.now);
  if (silences.length > 0) return { reason: 'silenced', by: silences };
  const by = inhibited.get(state.key);
  if (by !== undefined) return { reason: 'inhibited', by };
  return null;
}
