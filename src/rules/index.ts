/**
 * Rules: one pure function per kind (this directory, one file each) and the dispatcher.
 * `evaluateRule` says, for one rule and one box, whether the condition is active, inactive or
 * unknown this cycle; `for`, `keep_firing_for`, inhibition and silences are the alert state
 * machine's business (src/alerts/), not the rules'.
 */
import type { BoxSnapshot } from '../domain/model.js';
import type { RuleConfig, RuleOfKind } from '../config/schema.js';
import { ruleAppliesTo, type BoxState, type FleetContext, type RuleResult } from './types.js';
import { evaluateDisconnected } from './disconnected.js';
import { evaluateLowBattery } from './low-battery.js';
import { evaluateWeakSignal } from './weak-signal.js';
import { evaluateStale } from './stale.js';
import { evaluateFirmwareDrift } from './firmware-drift.js';
import { evaluateMissing } from './missing.js';
import { evaluateCallFailureRate } from './call-failure-rate.js';
import { evaluateCallStuck } from './call-stuck.js';
import { evaluateCallsSilent } from './calls-silent.js';
import { evaluateFleetCallFailureRate } from './fleet-call-failure-rate.js';
import { evaluateRecordingLost } from './recording-lost.js';
import { evaluateArchiveFailing } from './archive-failing.js';
import type { CallFacts } from './facts.js';
import { FLEET_RULE_KINDS } from '../vocabulary.js';
import { compareVersions } from './version.js';

export type { Condition, FleetContext, KindEvaluator, RuleResult } from './types.js';
export { compareVersions, isVersion } from './version.js';
export { boxesToForget } from './missing.js';
export { ruleAppliesTo } from './types.js';
export { globToRegExp, matchesAny, matchesGlob } from '../glob.js';

/** The rules that judge the boxes of `account` (a rule's `accounts`, absent: every account). */
export function rulesOfAccount<R extends { accounts?: readonly string[] | undefined }>(rules: readonly R[], account: string): R[] {
  return rules.filter((r) => r.accounts === undefined || r.accounts.includes(account));
}

/**
 * Evaluates one rule for one box. `box` is undefined when the store has never seen it (unknown);
 * a box absent from the device list has `missingSince` set: only `missing` rules judge it, every
 * other rule says unknown (no fresh data). A box outside the rule's `boxes` globs is inactive.
 * `wasActive` (the alert is pending or firing) selects the clear level of threshold rules.
 * `words` false: only the condition is read, the rest may be left out (see KindEvaluator).
 */
export function evaluateRule(rule: RuleConfig, box: BoxState | undefined, ctx: FleetContext, wasActive: boolean, words = true): RuleResult {
  if (box === undefined) return { condition: 'unknown', value: null, summary: 'no data for this box' };
  if (!ruleAppliesTo(rule, box.serial)) return { condition: 'inactive', summary: 'not selected by the rule' };
  if (rule.kind === 'missing') return evaluateMissing(rule, box, ctx, wasActive, words);
  if (box.missingSince !== null) return { condition: 'unknown', value: null, summary: 'missing from the device list' };
  switch (rule.kind) {
    case 'disconnected':
      return evaluateDisconnected(rule, box, ctx, wasActive, words);
    case 'low_battery':
      return evaluateLowBattery(rule, box, ctx, wasActive, words);
    case 'weak_signal':
      return evaluateWeakSignal(rule, box, ctx, wasActive, words);
    case 'stale':
      return evaluateStale(rule, box, ctx, wasActive, words);
    case 'firmware_drift':
      return evaluateFirmwareDrift(rule, box, ctx, wasActive, words);
    case 'call_failure_rate':
      return evaluateCallFailureRate(rule, box, ctx, wasActive, words);
    case 'call_stuck':
      return evaluateCallStuck(rule, box, ctx, wasActive, words);
    case 'calls_silent':
      return evaluateCallsSilent(rule, box, ctx, wasActive, words);
    case 'recording_lost':
      return evaluateRecordingLost(rule, box, ctx, wasActive, words);
    case 'fleet_call_failure_rate':
    case 'archive_failing':
      return { condition: 'inactive', summary: 'a fleet rule: judged once for the fleet' };
  }
}

/** The rules whose alert is one for the fleet (serial ''): evaluateFleetRule judges them, not evaluateRule. */
export function isFleetRule(rule: RuleConfig): rule is RuleOfKind<(typeof FLEET_RULE_KINDS)[number]> {
  return (FLEET_RULE_KINDS as readonly string[]).includes(rule.kind);
}

/** Evaluates a fleet rule once for the fleet. */
export function evaluateFleetRule(rule: RuleOfKind<(typeof FLEET_RULE_KINDS)[number]>, ctx: FleetContext, wasActive: boolean): RuleResult {
  return rule.kind === 'archive_failing' ? evaluateArchiveFailing(rule, ctx) : evaluateFleetCallFailureRate(rule, ctx, wasActive);
}

/**
 * The fleet's most common firmware among present boxes (missing ones excluded). Ties go to the
 * newest version, then to string order, so the answer never depends on the order of the list.
 */
export function firmwareMajority(boxes: readonly (Pick<BoxSnapshot, 'firmware'> & { missingSince?: number | null })[]): string | null {
  const counts = new Map<string, number>();
  for (const box of boxes) {
    if (box.missingSince !== undefined && box.missingSince !== null) continue;
    if (box.firmware === '') continue;
    counts.set(box.firmware, (counts.get(box.firmware) ?? 0) + 1);
  }
  let best: string | null = null;
  let bestCount = 0;
  for (const [version, count] of counts) {
    const better =
      best === null ||
      count > bestCount ||
      (count === bestCount && (compareVersions(version, best) > 0 || (compareVersions(version, best) === 0 && version > best)));
    if (better) {
      best = version;
      bestCount = count;
    }
  }
  return best;
}

/**
 * The per-cycle context: our clock, the gateway's clock (HTTP Date; null if unknown), the firmware
 * majority, and the call rules' facts (null: none fresh).
 */
export function fleetContext(
  boxes: readonly (Pick<BoxSnapshot, 'firmware'> & { missingSince?: number | null })[],
  now: number,
  gatewayNow: number | null,
  calls: CallFacts | null = null,
): FleetContext {
  return { now, gatewayNow, firmwareMajority: firmwareMajority(boxes), calls };
}
