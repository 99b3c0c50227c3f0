/** Types shared by the rule kinds and the dispatcher (src/rules/index.ts). */
import { boxMatches } from '../box-id.js';
import type { CallFacts } from './facts.js';
import type { BoxState } from '../domain/store.js';
import type { RuleConfig, RuleKind, RuleOfKind } from '../config/schema.js';

/** What one rule says about one box this cycle. `unknown` (no usable data) changes no alert. */
export type Condition = 'active' | 'inactive' | 'unknown';

export interface RuleResult {
  condition: Condition;
  /**
   * The observed value: battery percent, signal dBm, seconds since last seen, firmware version,
   * or a state word ('disconnected', 'missing', ...). null when the box reports none.
   */
  value?: number | string | null;
  /** The threshold in words, e.g. "below 20% (clears above 25%)". */
  threshold?: string;
  /** One human-readable line about the box's condition, without the box's name. */
  summary?: string;
}

/** Facts about the whole fleet and the time, computed once per cycle. */
export interface FleetContext {
  /** boxwatch's clock (ms). */
  now: number;
  /** The gateway's clock estimate from the HTTP Date header (ms); null if unknown. */
  gatewayNow: number | null;
  /** The most common firmware among present boxes; null with no boxes. */
  firmwareMajority: string | null;
  /** The call rules' facts from the last successful call sync; null: none (call rules say unknown). */
  calls: CallFacts | null;
}

/**
 * A rule kind's pure evaluation for a box that is present in the device list. With `words` false
 * only the condition is read, and the rule may answer with it alone (`bare`): the alert pipeline
 * judges every rule for every box and keeps only the results of alerts not at rest or becoming
 * active (about 2 % of them at 10,000 simulated boxes), and asks again with words for those.
 */
export type KindEvaluator<K extends RuleKind> = (
  rule: RuleOfKind<K>,
  box: BoxState,
  ctx: FleetContext,
  wasActive: boolean,
  words: boolean,
) => RuleResult;

/** The answers of an evaluation without words, one per condition. */
const BARE: Readonly<Record<Condition, RuleResult>> = {
  active: Object.freeze({ condition: 'active' }),
  inactive: Object.freeze({ condition: 'inactive' }),
  unknown: Object.freeze({ condition: 'unknown' }),
};

/**
 * The condition alone, as a rule answers without words (KindEvaluator): one shared object per
 * condition, not a new one per rule, box and cycle that is garbage at once.
 */
export function bare(condition: Condition): RuleResult {
  return BARE[condition];
}

export type { BoxState, RuleConfig };

/**
 * True when the rule's `boxes` globs select this box: its id (`ACCOUNT/SERIAL` outside the
 * default account) or its bare serial. The `accounts` filter is judged per cycle (`rulesOfAccount`).
 */
export function ruleAppliesTo(rule: RuleConfig, serial: string): boolean {
  return boxMatches(serial, rule.boxes);
}
