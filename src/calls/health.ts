/**
 * Call health facts: what the call rules (src/rules/call-*.ts) judge, read from the calls
 * repository once after every successful call sync (calls change only then), for every
 * configured call rule. The alert pipeline hands the latest facts to the rules each poll cycle;
 * without fresh facts (no successful call sync yet in this process, or the last one failed) the
 * call rules say unknown and their alerts stay as they are.
 */
import type { RuleConfig, RuleOfKind } from '../config/schema.js';
import { matchesAny } from '../glob.js';
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
export async function readCallFacts(repo: CallsRepo, rules: readonly RuleConfig[], now: number, options: { lookBackMs: number }): Promise<CallFacts> {
  const byRule = new Map<string, CallRuleFacts>();
  for (const rule of rules) {
    if (!isCallRuleKind(rule.kind)) continue;
    byRule.set(rule.name, await factsOf(repo, rule as RuleOfKind<typeof rule.kind>, now, options.lookBackMs));
  }
  return { at: now, byRule };
}

async function factsOf(repo: CallsRepo, rule: RuleOfKind<'call_failure_rate' | 'call_stuck' | 'calls_silent' | 'fleet_call_failure_rate'>, now: number, lookBackMs: number): Promise<CallRuleFacts> {
  switch (rule.kind) {
    case 'call_failure_rate': {
      const { calls, ms } = rule.window;
      const bySerial = await (calls !== null ? repo.failureCounts({ since: now - rule.maxAge, lastCalls: calls }) : repo.failureCounts({ since: now - (ms as number) }));
      return { kind: rule.kind, bySerial };
    }
    case 'call_stuck':
      // Calls older than calls.catch_up are no longer asked about: whether they ended is unknown.
      return { kind: rule.kind, bySerial: await repo.stuckCalls(now - rule.maxDuration, now - lookBackMs) };
    case 'calls_silent': {
      const today = dayOf(now);
      // The full days before the silence could have begun.
      const lastFullDay = dayOf(now - rule.silentFor) - 1;
      return { kind: rule.kind, lastCall: await repo.lastCallAt(), dailyCallers: await repo.dailyCallers(Math.min(lastFullDay, today - 1) - rule.activeDays + 1, Math.min(lastFullDay, today - 1)) };
    }
    case 'fleet_call_failure_rate': {
      const counts = { calls: 0, failed: 0 };
      for (const [serial, c] of await repo.failureCounts({ since: now - rule.window })) {
        if (!matchesAny(serial, rule.boxes)) continue;
        counts.calls += c.calls;
        counts.failed += c.failed;
      }
      return { kind: rule.kind, counts };
    }
  }
}

