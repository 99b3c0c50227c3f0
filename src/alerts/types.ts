/**
 * Types of the alert engine. Everything here is plain data: JSON-serialisable, times as
 * milliseconds since the epoch, `null` rather than `undefined`, so that a state, a transition or a
 * notification intent can be stored as one SQLite row (or one JSON column) as it is.
 */

/** What a rule says about one (rule, box) in one cycle. `unknown` = no fresh data: changes nothing. */
export type Condition = 'active' | 'inactive' | 'unknown';

import type { Severity } from '../vocabulary.js';

export { SEVERITY_RANK, type Severity } from '../vocabulary.js';

/** The life of one alert: inactive -> pending -> firing -> resolved -> inactive. */
export type AlertStatus = 'inactive' | 'pending' | 'firing' | 'resolved';

/** A value shown in messages (battery percent, dBm, firmware version, age). */
export type AlertValue = number | string | null;

/** The part of a rule's configuration the alert engine needs. */
export interface AlertRuleRef {
  name: string;
  kind: string;
  severity: Severity;
  /** `for`: how long the condition must hold before the alert fires. 0 fires at once. */
  forMs: number;
  /** `keep_firing_for`: how long a firing alert stays firing after its condition cleared. */
  keepFiringForMs: number;
  /** Consecutive active evaluations needed before firing (gateway_unreachable: N failed cycles). Default 1. */
  forCycles?: number;
}

/**
 * One rule's verdict for one box in one cycle (serial '' for fleet-level rules such as the
 * built-in gateway alerts).
 */
export interface RuleEvaluation {
  rule: AlertRuleRef;
  serial: string;
  condition: Condition;
  value?: AlertValue;
  threshold?: AlertValue;
  /** Short human text for messages, e.g. `battery 12% < 20%`. */
  summary?: string | null;
}

/**
 * A rule as the engine sees it, every field present (`forCycles` undefined: 1). Every rule
 * reference of a cycle is built here (the configured rules', the gateway's, the test calls'), for
 * the reason ruleEvaluation gives.
 */
export function alertRuleRef(name: string, kind: string, severity: Severity, forMs: number, keepFiringForMs: number, forCycles?: number): AlertRuleRef {
  return { name, kind, severity, forMs, keepFiringForMs, forCycles };
}

/**
 * A rule evaluation with every field present (undefined: the alert keeps its value, threshold or
 * summary). The evaluations of a cycle are built here (the rules', the gateway's, the test calls'),
 * so that V8 sees one kind of evaluation object in the engine.
 */
export function ruleEvaluation(rule: AlertRuleRef, serial: string, condition: Condition, value?: AlertValue, threshold?: AlertValue, summary?: string | null): RuleEvaluation {
  return { rule, serial, condition, value, threshold, summary };
}

/** The stored state of one (rule, box) alert. */
export interface AlertState {
  /** `${rule}\u0000${serial}`, or the rule name alone for fleet-level alerts. */
  key: string;
  rule: string;
  kind: string;
  /** Box serial; '' for fleet-level alerts. */
  serial: string;
  severity: Severity;
  status: AlertStatus;
  /** When the current status was entered. */
  since: number;
  /** Start of the current run of active evaluations (pending/firing); null otherwise. */
  activeSince: number | null;
  /**
   * Consecutive active evaluations, counted up to the number the alert needs to fire (a gateway
   * alert's `unreachable_after`; 1 for the rules, whose `for` is a duration): an alert that stays
   * active does not change from cycle to cycle. An inactive one resets it, an unknown one neither
   * counts nor resets.
   */
  activeCycles: number;
  /** When the alert last started firing; kept while resolved for messages. */
  firingSince: number | null;
  /** While firing: when the condition was first seen inactive again (keep_firing_for); null otherwise. */
  clearedSince: number | null;
  /** When the alert last resolved; null until then or once it fires again. */
  resolvedAt: number | null;
  /**
   * The last notification sent for this alert said "firing". A firing alert with false is owed a
   * firing notification; a non-firing alert with true is owed a resolved notification. Both are
   * sent at the first evaluation where the alert is not held back (silence, inhibition, gateway down).
   */
  notifiedFiring: boolean;
  /** When the last firing or repeat notification was emitted (for repeat_interval). */
  lastNotifiedAt: number | null;
  value: AlertValue;
  threshold: AlertValue;
  summary: string | null;
}

/** Why an alert was not notified at the moment of a transition. */
export type HeldBackReason = 'silenced' | 'inhibited' | 'gateway_down';

/** One state change, for the alert history. */
export interface Transition {
  key: string;
  rule: string;
  kind: string;
  serial: string;
  severity: Severity;
  from: AlertStatus;
  to: AlertStatus;
  at: number;
  value: AlertValue;
  threshold: AlertValue;
  summary: string | null;
  /** Set by the engine when the alert was held back at that moment; null otherwise. */
  heldBack: HeldBackReason | null;
  /** Silence ids (silenced) or inhibiting alert keys (inhibited); empty otherwise. */
  heldBy: string[];
}

export type NotificationType = 'firing' | 'resolved' | 'repeat';

/** "Tell people about this alert": one per alert and cycle, before routing and grouping. */
export interface NotificationIntent {
  key: string;
  rule: string;
  kind: string;
  serial: string;
  severity: Severity;
  type: NotificationType;
  /** The evaluation time that produced the intent (grouping measures group_wait from here). */
  createdAt: number;
  firingSince: number | null;
  /** Set for `resolved`. */
  resolvedAt: number | null;
  value: AlertValue;
  threshold: AlertValue;
  summary: string | null;
}

/** The key of the alert of `rule` for box `serial` ('' = fleet level: the rule name alone). */
export function alertKey(rule: string, serial: string): string {
  return serial === '' ? rule : `${rule}\u0000${serial}`;
}

/** The printable id of an alert: `rule/serial`, the rule alone for fleet-level alerts. */
export function alertId(rule: string, serial: string): string {
  return serial === '' ? rule : `${rule}/${serial}`;
}

/** Inverse of alertKey. */
export function parseAlertKey(key: string): { rule: string; serial: string } {
  const i = key.indexOf('\u0000');
  return i < 0 ? { rule: key, serial: '' } : { rule: key.slice(0, i), serial: key.slice(i + 1) };
}
