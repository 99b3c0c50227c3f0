/**
 * The built-in, always-on gateway alerts, modelled as fleet-level rules (serial ''):
 *
 * - `gateway_unreachable`: fires after N consecutive failed cycles (default 3) whose error is not
 *   one of the two below (network, timeout, 5xx, 429, unexpected answers).
 * - `gateway_unauthorized`: fires at once when the gateway rejects the key.
 * - `gateway_schema`: fires when responses no longer have the expected shape, after M consecutive
 *   such cycles (default 1: at once): a failed cycle (code `schema` or `too_large`), or a good
 *   cycle in which records were set aside as invalid (its value names them).
 * - `gateway_clock`: fires while the gateway's Date header is more than a day off our clock (the
 *   header is then ignored; last_seen is taken as it is).
 *
 * A failure says nothing about the other two questions it could not answer: while the gateway is
 * unreachable, whether the key is valid is unknown (a firing gateway_unauthorized stays firing).
 */
import { formatDuration } from '../duration.js';
import { TRUNCATED_MARK, truncate } from '../text.js';
import { GATEWAY_CLOCK, GATEWAY_RULES, GATEWAY_SCHEMA, GATEWAY_UNAUTHORIZED, GATEWAY_UNREACHABLE, type Severity } from '../vocabulary.js';
import { alertRuleRef, ruleEvaluation, type AlertRuleRef, type RuleEvaluation } from './types.js';

export { GATEWAY_CLOCK, GATEWAY_SCHEMA, GATEWAY_UNAUTHORIZED, GATEWAY_UNREACHABLE } from '../vocabulary.js';

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
  /** Records set aside as invalid in a good cycle, `serial: problem`. */
  rejected?: readonly string[];
  /** The gateway clock's offset when beyond the bound (its Date header ignored), else null. */
  gatewayClockSkewMs?: number | null;
}

/** The names of the built-in rules (for `ruleNames` of the engine): the vocabulary's list. */
export const GATEWAY_RULE_NAMES: readonly string[] = GATEWAY_RULES;

/** The built-in rules with their timing. */
export function gatewayRules(config: GatewayAlertsConfig = {}): { unreachable: AlertRuleRef; unauthorized: AlertRuleRef; schema: AlertRuleRef; clock: AlertRuleRef } {
  const severity = config.severity ?? 'critical';
  return {
    unreachable: alertRuleRef(GATEWAY_UNREACHABLE, GATEWAY_UNREACHABLE, severity, 0, 0, Math.max(1, config.unreachableAfter ?? 3)),
    unauthorized: alertRuleRef(GATEWAY_UNAUTHORIZED, GATEWAY_UNAUTHORIZED, severity, 0, 0),
    schema: alertRuleRef(GATEWAY_SCHEMA, GATEWAY_SCHEMA, severity, 0, 0, Math.max(1, config.schemaAfter ?? 1)),
    clock: alertRuleRef(GATEWAY_CLOCK, GATEWAY_CLOCK, 'warning', 0, 0),
  };
}

/**
 * True when the cycle brought no fresh per-box data: the engine then freezes every per-box alert,
 * and the views, /healthz and the log say the gateway is failing. The one test of "gateway down".
 */
export function isGatewayDown(cycle: Pick<GatewayCycle, 'outcome'>): boolean {
  return cycle.outcome === 'failed';
}

/** The conditions of the built-in alerts for one cycle, for the alerts of the account's fleet key `serial` ('': the default account's). */
export function gatewayEvaluations(cycle: GatewayCycle, config: GatewayAlertsConfig = {}, serial = ''): RuleEvaluation[] {
  const rules = gatewayRules(config);
  const ev = (rule: AlertRuleRef, condition: RuleEvaluation['condition'], value: string | null = cycle.errorCode): RuleEvaluation =>
    condition === 'unknown'
      ? ruleEvaluation(rule, serial, condition)
      : ruleEvaluation(rule, serial, condition, condition === 'active' ? value : undefined, undefined, SUMMARIES[rule.kind]?.[condition] ?? null);
  const skew = cycle.gatewayClockSkewMs ?? null;
  const clock = skew === null ? ev(rules.clock, cycle.outcome === 'ok' ? 'inactive' : 'unknown') : ev(rules.clock, 'active', skewText(skew));
  if (cycle.outcome === 'ok') {
    const rejected = cycle.rejected ?? [];
    const schema = rejected.length === 0 ? ev(rules.schema, 'inactive') : ev(rules.schema, 'active', rejectedText(rejected));
    return [ev(rules.unreachable, 'inactive'), ev(rules.unauthorized, 'inactive'), schema, clock];
  }
  switch (cycle.errorCode) {
    case 'unauthorized':
      return [ev(rules.unreachable, 'inactive'), ev(rules.unauthorized, 'active'), ev(rules.schema, 'unknown'), clock];
    case 'schema':
    case 'too_large':
      return [ev(rules.unreachable, 'inactive'), ev(rules.unauthorized, 'inactive'), ev(rules.schema, 'active'), clock];
    default:
      return [ev(rules.unreachable, 'active'), ev(rules.unauthorized, 'unknown'), ev(rules.schema, 'unknown'), clock];
  }
}

/** `2 records set aside: SN-1: battery_level: ...; SN-2: ...` (at most three named). */
function rejectedText(rejected: readonly string[]): string {
  const named = rejected.slice(0, 3).join('; ');
  const more = rejected.length > 3 ? `; and ${rejected.length - 3} more` : '';
  return truncate(`${rejected.length} record${rejected.length === 1 ? '' : 's'} set aside: ${named}${more}`, 500, TRUNCATED_MARK);
}

/** `ahead by 27375d` / `behind by 9496d`. */
function skewText(skewMs: number): string {
  return `${skewMs > 0 ? 'ahead' : 'behind'} by ${formatDuration(Math.abs(skewMs))}`;
}

const SUMMARIES: Record<string, { active: string; inactive: string }> = {
  [GATEWAY_UNREACHABLE]: { active: 'the gateway cannot be reached', inactive: 'the gateway answers again' },
  [GATEWAY_UNAUTHORIZED]: { active: 'the gateway rejects the account secret key (wrong or rotated)', inactive: 'the gateway accepts the key again' },
  [GATEWAY_SCHEMA]: { active: 'gateway responses no longer have the expected shape', inactive: 'gateway responses have the expected shape again' },
  [GATEWAY_CLOCK]: { active: "the gateway's clock is more than a day off; its Date header is ignored", inactive: "the gateway's clock is within a day of ours again" },
};
