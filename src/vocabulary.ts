/**
 * The words every stage shares, defined once: alert severities and their ranking, the rule kinds
 * a configuration may use, and the names of the built-in gateway rules. Imported by the
 * configuration schema, the alert pipeline, the notifiers and the CLI; depends on nothing.
 */

/** Most severe first. */
export const SEVERITIES = ['critical', 'warning', 'info'] as const;
export type Severity = (typeof SEVERITIES)[number];

/** Higher is more severe: critical 3, warning 2, info 1. */
export const SEVERITY_RANK: Readonly<Record<Severity, number>> = { critical: 3, warning: 2, info: 1 };

/** The most severe of `severities` (info when empty). */
export function highestOf(severities: Iterable<Severity>): Severity {
  let best: Severity = 'info';
  for (const s of severities) if (SEVERITY_RANK[s] > SEVERITY_RANK[best]) best = s;
  return best;
}

/** The rule kinds about calls (docs/calls.md): judged from the calls table, not the device list. */
export const CALL_RULE_KINDS = ['call_failure_rate', 'call_stuck', 'calls_silent', 'fleet_call_failure_rate'] as const;
export type CallRuleKind = (typeof CALL_RULE_KINDS)[number];

/** The rule kinds about the recording archive (docs/calls.md): judged from the archive, they need an `archive:` section. */
export const ARCHIVE_RULE_KINDS = ['recording_lost', 'archive_failing'] as const;
export type ArchiveRuleKind = (typeof ARCHIVE_RULE_KINDS)[number];

/** The rule kinds whose alert is one for the fleet (serial ''), not one per box. */
export const FLEET_RULE_KINDS = ['fleet_call_failure_rate', 'archive_failing'] as const;

/** The rule kinds a configuration may use (one evaluator each in src/rules/). */
export const RULE_KINDS = ['disconnected', 'low_battery', 'weak_signal', 'stale', 'firmware_drift', 'missing', ...CALL_RULE_KINDS, ...ARCHIVE_RULE_KINDS] as const;
export type RuleKind = (typeof RULE_KINDS)[number];

/** True for the kinds judged from calls (they need a `calls:` section). */
export function isCallRuleKind(kind: string): kind is CallRuleKind {
  return (CALL_RULE_KINDS as readonly string[]).includes(kind);
}

/** True for the kinds judged from the recording archive (they need an `archive:` section). */
export function isArchiveRuleKind(kind: string): kind is ArchiveRuleKind {
  return (ARCHIVE_RULE_KINDS as readonly string[]).includes(kind);
}

/**
 * The built-in alert of test calls (`test_calls:`, docs/calls.md): one per box, raised when a test
 * call from it fails or does not complete in time; name = kind.
 */
export const TEST_CALL_FAILED = 'test_call_failed';

/** The built-in rules about the gateway itself (configured under `alerting.gateway`); name = kind. */
export const GATEWAY_RULES = ['gateway_unreachable', 'gateway_unauthorized', 'gateway_schema', 'gateway_clock'] as const;
export type GatewayRuleName = (typeof GATEWAY_RULES)[number];

export const GATEWAY_UNREACHABLE: GatewayRuleName = 'gateway_unreachable';
export const GATEWAY_UNAUTHORIZED: GatewayRuleName = 'gateway_unauthorized';
export const GATEWAY_SCHEMA: GatewayRuleName = 'gateway_schema';
export const GATEWAY_CLOCK: GatewayRuleName = 'gateway_clock';

/** True for the names of the built-in gateway rules. */
export function isGatewayRule(name: string): name is GatewayRuleName {
  return (GATEWAY_RULES as readonly string[]).includes(name);
}
