/**
 * Call health facts: what the call rules (src/rules/call-*.ts) judge, read from the calls
 * repository once after every successful call sync (calls change only then), for every
 * configured call rule. The alert pipeline hands the latest facts to the rules each poll cycle;
 * without fresh facts (no successful call sync yet in this process, or the last one failed) the
 * call rules say unknown and their alerts stay as they are.
 *
 * Calls are stored under their box's id (src/box-id.ts), so facts are keyed like the boxes the
 * rules judge; each account's call sync reads the facts of its own boxes (`account`).
 */
import type { RuleConfig, RuleOfKind } from '../config/schema.js';
import { accountOf, boxMatches } from '../box-id.js';
import { isCallRuleKind } from '../vocabulary.js';
import { dayOf, type CallsRepo, type FailureCount, type StuckCalls } from '../store/calls-repo.js';
import type { ArchiveRuleFacts } from '../archive/facts.js';

/** What one call rule needs, by kind. */
export type CallRuleFacts =
  | { kind: 'call_failure_rate'; bySerial: ReadonlyMap<string, FailureCount> }
  | { kind: 'call_stuck'; bySerial: ReadonlyMap<string, StuckCalls> }
  | { kind: 'calls_silent'; lastCall: ReadonlyMap<string, number>; dailyCallers: ReadonlySet<string> }
  | { kind: 'fleet_call_failure_rate'; counts: FailureCount }
  | ArchiveRuleFacts;

export interface CallFacts {
  /** When they were read, on the gateway's clock (call times are the gateway's): ages are measured from here. */
  at: number;
  /** By rule name. */
  byRule: ReadonlyMap<string, CallRuleFacts>;
}

/** Reads the facts of every call rule among `rules` (one or two queries per rule). */
/** Reads the facts of every call rule among `rules` (one or two queries per rule), of the boxes of `options.account`. */
export async function readCallFacts(repo: CallsRepo, rules: readonly RuleConfig[], now: number, options: { lookBackMs: number; account: string }): Promise<CallFacts> {
  const byRule = new Map<string, CallRuleFacts>();
  const ofAccount = (key: string): boolean => accountOf(key) === options.account;
  for (const rule of rules) {
    if (!isCallRuleKind(rule.kind)) continue;
    byRule.set(rule.name, await factsOf(repo, rule as RuleOfKind<typeof rule.kind>, now, options.lookBackMs, ofAccount));
  }
  return { at: now, byRule };
}

/** The entries of `map` whose box id passes `keep`. */
function only<V>(map: ReadonlyMap<string, V>, keep: (key: string) => boolean): Map<string, V> {
  return new Map([...map].filter(([key]) => keep(key)));
}

async function factsOf(
  repo: CallsRepo,
  rule: RuleOfKind<'call_failure_rate' | 'call_stuck' | 'calls_silent' | 'fleet_call_failure_rate'>,
  now: number,
  lookBackMs: number,
  ofAccount: (key: string) => boolean,
): Promise<CallRuleFacts> {
  switch (rule.kind) {
    case 'call_failure_rate': {
      const { calls, ms } = rule.window;
      const bySerial = await (calls !== null ? repo.failureCounts({ since: now - rule.maxAge, lastCalls: calls }) : repo.failureCounts({ since: now - (ms as number) }));
      return { kind: rule.kind, bySerial: only(bySerial, ofAccount) };
    }
    case 'call_stuck':
      // Calls older than calls.catch_up are no longer asked about: whether they ended is unknown.
      return { kind: rule.kind, bySerial: only(await repo.stuckCalls(now - rule.maxDuration, now - lookBackMs), ofAccount) };
    case 'calls_silent': {
      const today = dayOf(now);
      // The full days before the silence could have begun.
      const lastFullDay = dayOf(now - rule.silentFor) - 1;
      const callers = await repo.dailyCallers(Math.min(lastFullDay, today - 1) - rule.activeDays + 1, Math.min(lastFullDay, today - 1));
      return { kind: rule.kind, lastCall: only(await repo.lastCallAt(), ofAccount), dailyCallers: new Set([...callers].filter(ofAccount)) };
    }
    case 'fleet_call_failure_rate': {
      // The account's fleet: its boxes the rule selects, with the rules' own matcher.
      const counts = { calls: 0, failed: 0 };
      for (const [serial, c] of await repo.failureCounts({ since: now - rule.window })) {
        if (!ofAccount(serial) || !boxMatches(serial, rule.boxes)) continue;
        counts.calls += c.calls;
        counts.failed += c.failed;
      }
      return { kind: rule.kind, counts };
    }
  }
}

