/**
 * The built-in, always-on gateway alerts, modelled as fleet-level rules (serial ''):
 *
 * - `gateway_unreachable`: fires after N consecutive failed cycles (default 3) whose error is not
 *   one of the two below (network, timeout, 5xx, 429, unexpected answers).
 * - `gateway_unauthorized`: fires at once when the gateway rejects the key.
 * - `gateway_schema`: fires when responses no longer have the expected shape, after M consecutive
 *   such cycles (default 1: at once).
 *
 * A failure says nothing about the other two questions it could not answer: while the gateway is
 * unreachable, whether the key is valid is unknown (a firing gateway_unauthorized stays firing).
 */
import { GATEWAY_RULES, GATEWAY_SCHEMA, GATEWAY_UNAUTHORIZED, GATEWAY_UNREACHABLE, type Severity } from '../vocabulary.js';
import type { AlertRuleRef, RuleEvaluation } from './types.js';

export { GATEWAY_SCHEMA, GATEWAY_UNAUTHORIZED, GATEWAY_UNREACHABLE } from '../vocabulary.js';

/** `alerting.gateway` in the configuration (Config['alerting']['gateway'] fits as it is). */
export interface GatewayAlertsConfig {
  /** `unreachable_after`: consecutive failed cycles before gateway_unreachable fires; default 3. */
  unreachableAfter?: number;
  /** `schema_after`: consecutive cycles with unexpected responses before gateway_schema fires; default 1. */
  schemaAfter?: number;
  /** Severity of all three; default critical. */
  severity?: Severity;
}

/** The outcome of one poll cycle as the poller records it (CycleRecord.outcome / errorCode). */
export interface GatewayCycle {
  outcome: 'ok' | 'failed';
  /** GatewayError code when failed: `unauthorized`, `schema`, `unavailable`, `rate_limited`, ... */
  errorCode: string | null;
}

/** The names of the built-in rules (for `ruleNames` of the engine): the vocabulary's list. */
export const GATEWAY_RULE_NAMES: readonly string[] = GATEWAY_RULES;

/** The three built-in rules with their timing. */
export function gatewayRules(config: GatewayAlertsConfig = {}): { unreachable: AlertRuleRef; unauthorized: AlertRuleRef; schema: AlertRuleRef } {
  const severity = config.severity ?? 'critical';
  const base = { severity, forMs: 0, keepFiringForMs: 0 };
  return {
    unreachable: { ...base, name: GATEWAY_UNREACHABLE, kind: GATEWAY_UNREACHABLE, forCycles: Math.max(1, config.unreachableAfter ?? 3) },
    unauthorized: { ...base, name: GATEWAY_UNAUTHORIZED, kind: GATEWAY_UNAUTHORIZED },
    schema: { ...base, name: GATEWAY_SCHEMA, kind: GATEWAY_SCHEMA, forCycles: Math.max(1, config.schemaAfter ?? 1) },
  };
}

/** True when the cycle brought no fresh per-box data: the engine then freezes every per-box alert. */
export function isGatewayDown(cycle: GatewayCycle): boolean {
  return cycle.outcome === 'failed';
}

/** The conditions of the three built-in alerts for one cycle. */
export function gatewayEvaluations(cycle: GatewayCycle, config: GatewayAlertsConfig = {}): RuleEvaluation[] {
  const rules = gatewayRules(config);
  const ev = (rule: AlertRuleRef, condition: RuleEvaluation['condition']): RuleEvaluation => {
    const e: RuleEvaluation = { rule, serial: '', condition };
    if (condition === 'unknown') return e;
    if (condition === 'active') e.value = cycle.errorCode;
    e.summary = SUMMARIES[rule.kind]?.[condition] ?? null;
    return e;
  };
  if (cycle.outcome === 'ok') return [ev(rules.unreachable, 'inactive'), ev(rules.unauthorized, 'inactive'), ev(rules.schema, 'inactive')];
  switch (cycle.errorCode) {
    case 'unauthorized':
      return [ev(rules.unreachable, 'inactive'), ev(rules.unauthorized, 'active'), ev(rules.schema, 'unknown')];
    case 'schema':
      return [ev(rules.unreachable, 'inactive'), ev(rules.unauthorized, 'inactive'), ev(rules.schema, 'active')];
    default:
      return [ev(rules.unreachable, 'active'), ev(rules.unauthorized, 'unknown'), ev(rules.schema, 'unknown')];
  }
}

const SUMMARIES: Record<string, { active: string; inactive: string }> = {
  [GATEWAY_UNREACHABLE]: { active: 'the gateway cannot be reached', inactive: 'the gateway answers again' },
  [GATEWAY_UNAUTHORIZED]: { active: 'the gateway rejects the account secret key (wrong or rotated)', inactive: 'the gateway accepts the key again' },
  [GATEWAY_SCHEMA]: { active: 'gateway responses no longer have the expected shape', inactive: 'gateway responses have the expected shape again' },
};
