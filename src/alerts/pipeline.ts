/**
 * The alerting stage of a cycle: rules over the stored box states -> alert engine -> alert state,
 * transitions and routed notifications. Pure: `decide` gets what the store read inside the
 * cycle's transaction (CycleView) and returns what the store writes in it (AlertWrite), so a
 * cycle, the transitions it caused and their notifications are stored together or not at all
 * (the store's `commitCycle`, see src/alerts/repositories.ts).
 */
import type { Config } from '../config/index.js';
import type { CallFacts } from '../rules/facts.js';
import type { TestCallVerdict } from '../domain/test-calls.js';
import { testCallEvaluations } from './test-call-failed.js';
import { TEST_CALL_FAILED } from '../vocabulary.js';
import { boxesToForget, evaluateFleetRule, evaluateRule, fleetContext, isFleetRule, rulesOfAccount, type FleetContext } from '../rules/index.js';
import { accountOf, DEFAULT_ACCOUNT, fleetKey } from '../box-id.js';
import type { AlertItem } from '../domain/notifications.js';
import type { BoxState, CycleRecord } from '../domain/store.js';
import type { Ack } from './acks.js';
import { evaluateCycle, isActive, ruleRef, type CycleResult as EngineResult } from './engine.js';
import { GATEWAY_RULE_NAMES, gatewayEvaluations, isGatewayDown } from './gateway.js';
import { fanOut } from './group.js';
import { toAlertItem } from './message.js';
import type { AlertWrite, CycleScope, CycleView } from './repositories.js';
import { alertRuleRef, ruleEvaluation, type AlertRuleRef, type AlertState, type RuleEvaluation } from './types.js';
import { DEFAULT_LEASE_MS, leaseInUse, type Lease } from '../domain/leases.js';

/** What the alert stage reads of the configuration (`boxwatch rules test` builds one without keys or addresses). */
export type AlertPipelineConfig = Pick<Config, 'rules' | 'alerting' | 'notifiers' | 'testCalls' | 'cluster'> & { gateways: readonly { name: string }[] };

export interface AlertPipelineDeps {
  config: AlertPipelineConfig;
  /** The call rules' facts of the account's boxes from its last successful call sync (src/rules/facts.ts); null or absent: none. */
  callFacts?: (account: string) => CallFacts | null;
  /** The test calls' verdicts per box of the account (src/calls/test-calls.ts); null or absent: none fresh (test_call_failed says unknown). */
  testCallVerdicts?: (account: string) => ReadonlyMap<string, TestCallVerdict> | null;
}

export interface CycleAlerts extends EngineResult {
  /** Items queued for the notifiers (after routing). */
  queued: number;
  /** Serials of the boxes forgotten by this cycle (the missing rule's forget_after). */
  forgotten: string[];
  /** What this cycle retired of accounts no longer configured (`retireRemovedAccounts`); null: nothing. */
  removedAccounts: { accounts: string[]; alerts: number; boxes: string[] } | null;
}

/** The summary of an alert resolved because its account left `gateways:`. */
export const ACCOUNT_REMOVED = 'account removed from the configuration';

/**
 * The alerts and boxes of accounts no longer in `gateways:` (removed or renamed; SIGHUP reload or
 * restart): their alerts resolve at once with the summary ACCOUNT_REMOVED (a firing one is
 * notified resolved once; a pending one just ends), and their boxes leave the fleet as forgotten
 * boxes do (`forget`: status, /metrics and the API stop counting them; their history is kept, and
 * a box listed again by a configured account comes back).
 *
 * Done by the cycle of the first configured account only, inside its transaction: with replicas
 * the leader of that account does it under its fencing token, so exactly one replica retires them
 * and the resolved notifications are queued once (with no cycle of its own, a removed account
 * has no lease that could hand this work to anyone else).
 *
 * With replicas, "not in this process's `gateways:`" is not enough: while a change is rolled out
 * (one replica reloaded, the other not yet) their lists differ, and another replica may lead the
 * account right now. So an account whose lease is in use (`leaseInUse`: running, or expired or
 * released less than a lease time ago), read in the same transaction, is left alone: it is
 * retired once no replica has worked it for a lease time.
 */
export function accountsToRetire(
  configured: readonly string[],
  present: Iterable<string>,
  leases: readonly Lease[],
  now: number,
  leaseMs: number,
): Set<string> {
  const byAccount = new Map(leases.map((l) => [l.account, l]));
  const gone = new Set<string>();
  for (const account of present) if (!configured.includes(account) && !leaseInUse(byAccount.get(account), now, leaseMs)) gone.add(account);
  return gone;
}

function retireRemovedAccounts(
  configured: readonly string[],
  view: CycleView,
  ctx: { now: number; acks: ReadonlyMap<string, Ack>; repeatIntervalMs: number; leaseMs: number },
): { result: EngineResult; forget: string[]; accounts: string[]; resolved: number } | null {
  const present = new Set<string>();
  for (const s of view.states.values()) present.add(accountOf(s.serial));
  for (const b of view.boxes) present.add(b.account);
  const retiring = accountsToRetire(configured, present, view.leases ?? [], ctx.now, ctx.leaseMs);
  if (retiring.size === 0) return null;
  const gone = (key: string): boolean => retiring.has(accountOf(key));
  const states = new Map([...view.states].filter(([, s]) => gone(s.serial)));
  const forget = view.boxes.filter((b) => gone(b.serial)).map((b) => b.serial);
  if (states.size === 0 && forget.length === 0) return null;
  const evaluations: RuleEvaluation[] = [...states.values()].map((s) =>
    ruleEvaluation(alertRuleRef(s.rule, s.kind, s.severity, 0, 0), s.serial, 'inactive', null, null, ACCOUNT_REMOVED),
  );
  const result = evaluateCycle(states, evaluations, { ...ctx, gatewayDown: false, silences: view.silences, inhibit: false });
  // The accounts something happened to (resolved alerts left at rest later say nothing).
  const resolved = result.transitions.filter((t) => t.to === 'resolved').length;
  const accounts = [...new Set(result.transitions.filter((t) => t.to === 'resolved').map((t) => accountOf(t.serial)).concat(forget.map(accountOf)))].sort();
  return { result, forget, accounts, resolved };
}

/**
 * What a cycle of `account` judges, hence reads (CycleView): its own account's boxes and alerts;
 * the first configured account's cycle also every account no longer configured (it retires them:
 * retireRemovedAccounts). The one place that says which cycle retires removed accounts.
 */
export function cycleScope(configured: readonly string[], account: string): CycleScope {
  return account === configured[0] ? { account, alsoNotIn: configured } : { account };
}

/**
 * The rule evaluations of one cycle: the built-in gateway rules, and (when the cycle succeeded)
 * every configured rule for every known box (fleet rules once, serial ''). Pure; `rules test` runs the same function.
 *
 * An alert at rest (no previous state) whose condition is not active this cycle stays at rest,
 * and the engine skips it: such evaluations, most of the fleet's on most cycles, are left out,
 * and are judged without the words (threshold, summary) that only a kept evaluation carries.
 */
export function cycleEvaluations(
  config: Pick<Config, 'rules' | 'alerting'>,
  cycle: Pick<CycleRecord, 'outcome' | 'errorCode' | 'rejected' | 'gatewayClockSkewMs' | 'account'>,
  boxes: readonly BoxState[],
  prev: ReadonlyMap<string, AlertState>,
  now: number,
  gatewayNow: number | null,
  calls: CallFacts | null = null,
  testCalls: ReadonlyMap<string, TestCallVerdict> | null = null,
): RuleEvaluation[] {
  // The account's fleet-level alerts (its gateway's, its fleet rules') carry its fleet key.
  const fleet = fleetKey(cycle.account ?? DEFAULT_ACCOUNT);
  const evaluations = gatewayEvaluations(cycle, config.alerting.gateway, fleet);
  if (isGatewayDown(cycle)) return evaluations;
  const ctx = fleetContext(boxes, now, gatewayNow, calls); // the firmware majority leaves missing boxes out itself
  const prevByRule = statesByRule(prev);
  for (const rule of rulesOfAccount(config.rules, cycle.account ?? DEFAULT_ACCOUNT)) {
    const ref = ruleRef(rule);
    const prevOfRule = prevByRule.get(rule.name);
    if (isFleetRule(rule)) {
      const r = evaluateFleetRule(rule, ctx, isActive(prevOfRule?.get(fleet)));
      evaluations.push(ruleEvaluation(ref, fleet, r.condition, r.value ?? null, r.threshold ?? null, r.summary ?? null));
      continue;
    }
    for (const box of boxes) {
      const e = boxEvaluation(rule, ref, box, prevOfRule?.get(box.serial), ctx);
      if (e !== null) evaluations.push(e);
    }
  }
  if (testCalls !== null) evaluations.push(...testCallEvaluations(testCalls, boxes.filter((b) => b.missingSince === null).map((b) => b.serial)));
  return evaluations;
}

/**
 * The evaluation of one box rule for one box whose alert was `before` (undefined: at rest), or
 * null for an alert at rest that stays at rest. A function of its own, not the body of
 * cycleEvaluations' loop over the fleet: V8 compiles it once with the feedback of every box,
 * instead of compiling cycleEvaluations in the middle of its loop.
 */
function boxEvaluation(rule: Config['rules'][number], ref: AlertRuleRef, box: BoxState, before: AlertState | undefined, ctx: FleetContext): RuleEvaluation | null {
  const wasActive = isActive(before);
  // An alert at rest is judged without words first: most stay at rest and are left out.
  if (before === undefined && evaluateRule(rule, box, ctx, wasActive, false).condition !== 'active') return null;
  const r = evaluateRule(rule, box, ctx, wasActive);
  return ruleEvaluation(ref, box.serial, r.condition, r.value ?? null, r.threshold ?? null, r.summary ?? null);
}

/**
 * What one account's cycle judges: the rules of the account, its boxes, its alerts (the other
 * accounts' stay as they are). The one per-account split, of the daemon (`AlertPipeline.decide`)
 * and of `boxwatch rules test`.
 */
export function accountScope<R extends { accounts?: readonly string[] | undefined }>(
  rules: readonly R[],
  account: string,
  boxes: readonly BoxState[],
  states: ReadonlyMap<string, AlertState>,
): { rules: R[]; boxes: readonly BoxState[]; prev: ReadonlyMap<string, AlertState> } {
  return { rules: rulesOfAccount(rules, account), boxes: boxesOfAccount(boxes, account), prev: statesOfAccount(states, account) };
}

/** The boxes of one account: `boxes` itself when they all are (one account, or a cycle's view of its own), else a copy. */
export function boxesOfAccount(boxes: readonly BoxState[], account: string): readonly BoxState[] {
  for (const b of boxes) if (b.account !== account) return boxes.filter((x) => x.account === account);
  return boxes;
}

/** The alerts of one account (by the account of their box id or fleet key), by key: `states` itself when they all are, else a copy. */
export function statesOfAccount(states: ReadonlyMap<string, AlertState>, account: string): ReadonlyMap<string, AlertState> {
  let all = true;
  for (const s of states.values()) if (accountOf(s.serial) !== account) all = false;
  return all ? states : new Map([...states].filter(([, s]) => accountOf(s.serial) === account));
}

/** The alerts not at rest, by rule and then serial (looked up per box without building keys). */
function statesByRule(states: ReadonlyMap<string, AlertState>): Map<string, Map<string, AlertState>> {
  const byRule = new Map<string, Map<string, AlertState>>();
  for (const state of states.values()) {
    let ofRule = byRule.get(state.rule);
    if (ofRule === undefined) byRule.set(state.rule, (ofRule = new Map()));
    ofRule.set(state.serial, state);
  }
  return byRule;
}

export class AlertPipeline {
  constructor(private readonly deps: AlertPipelineDeps) {}

  /** The part of the fleet a cycle of `account` reads for `decide` (cycleScope). */
  scope(account: string): CycleScope {
    return cycleScope(this.deps.config.gateways.map((a) => a.name), account);
  }

  /**
   * Evaluates every rule for every box after a cycle was recorded. `view.boxes` are the stored
   * states after the cycle (of the cycle's scope, or the whole fleet); `gatewayNow` is the
   * gateway's clock at `now` (from the HTTP Date header).
   */
  decide(cycle: Pick<CycleRecord, 'outcome' | 'errorCode' | 'rejected' | 'gatewayClockSkewMs' | 'account'>, view: CycleView, now: number, gatewayNow: number | null): { alerts: AlertWrite<AlertItem>; result: CycleAlerts } {
    const { config } = this.deps;
    // A cycle judges its own account: its boxes, its alerts (the other accounts' stay as they are).
    const account = cycle.account ?? DEFAULT_ACCOUNT;
    const { rules, boxes, prev } = accountScope(config.rules, account, view.boxes, view.states);
    const down = isGatewayDown(cycle);
    // Boxes missing past a missing rule's forget_after leave the fleet now (never on a failed cycle).
    const forget = down ? [] : boxesToForget(rules, boxes, now);
    const fleet = forget.length === 0 ? boxes : boxes.filter((b) => !forget.includes(b.serial));
    const evaluations = cycleEvaluations(config, cycle, fleet, prev, now, gatewayNow, this.deps.callFacts?.(account) ?? null, this.deps.testCallVerdicts?.(account) ?? null);
    const acks = view.acks ?? new Map<string, Ack>();
    const accounts = config.gateways.map((a) => a.name);
    const leaseMs = config.cluster?.lease ?? DEFAULT_LEASE_MS;
    const removed = cycleScope(accounts, account).alsoNotIn !== undefined ? retireRemovedAccounts(accounts, view, { now, acks, repeatIntervalMs: config.alerting.repeatInterval, leaseMs }) : null;
    const own = evaluateCycle(prev, evaluations, {
      now,
      acks,
      gatewayDown: down,
      silences: view.silences,
      inhibit: config.alerting.inhibit,
      repeatIntervalMs: config.alerting.repeatInterval,
      ruleNames: [...rules.map((r) => r.name), ...GATEWAY_RULE_NAMES, ...(config.testCalls ? [TEST_CALL_FAILED] : [])],
      serials: serialsOf(fleet),
    });
    const result = removed === null ? own : mergeResults(own, removed.result);
    const routed = fanOut(result.notifications, config.notifiers);
    // The fleet by serial, for the names and locations of the boxes notified (most cycles notify none).
    let bySerial: Map<string, BoxState> | undefined;
    const queued = routed.map((r) => {
      bySerial ??= new Map(view.boxes.map((b) => [b.serial, b]));
      const box = bySerial.get(r.intent.serial);
      const labels = { name: box?.name ?? null, location: box?.location ?? null };
      return { notifier: r.notifier, createdAt: r.createdAt, item: toAlertItem(r.intent, labels, acks.get(r.intent.key)) };
    });
    const removedAccounts = removed === null || removed.accounts.length === 0 ? null : { accounts: removed.accounts, alerts: removed.resolved, boxes: removed.forget };
    return {
      alerts: {
        states: result.states,
        dropped: result.dropped,
        transitions: result.transitions,
        queued,
        forget: removed === null ? forget : [...forget, ...removed.forget],
        ...(removedAccounts !== null && { retired: removedAccounts.accounts }),
      },
      result: { ...result, queued: routed.length, forgotten: forget, removedAccounts },
    };
  }
}

/** The serials of `boxes`, read only if the engine asks (most cycles it does not). */
function serialsOf(boxes: readonly BoxState[]): Iterable<string> {
  return { *[Symbol.iterator]() { for (const b of boxes) yield b.serial; } };
}

/** Two engine results over disjoint alerts as one. */
function mergeResults(a: EngineResult, b: EngineResult): EngineResult {
  return {
    states: new Map([...a.states, ...b.states]),
    transitions: [...a.transitions, ...b.transitions],
    notifications: [...a.notifications, ...b.notifications],
    dropped: [...a.dropped, ...b.dropped],
  };
}
