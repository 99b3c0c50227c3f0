/**
 * The facts the rules judge that a cycle's box states do not hold: the calls' and the archive's.
 *
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
import { dayOf, type CallsRepo, type FailureCount, type StuckCalls } from '../domain/calls.js';
import type { LostRecordings, RecordingsRepo } from '../domain/recordings.js';

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

// What the archive rules judge (src/rules/recording-lost.ts, src/rules/archive-failing.ts): read
// by the archive after each of its passes, handed to the alert pipeline beside the call rules'
// facts (`withArchiveFacts`), and judged in every poll cycle like them.

/**
 * The code of the archive's failure while another archive directory than this process's is still
 * being written (archive.dir not shared between the replicas; src/archive/archiver.ts).
 */
export const UNSHARED_DIR = 'unshared_dir';

/** Why the archive is failing (it cannot write its files, or they are split), since when (boxwatch's clock). */
export interface ArchiveFailure {
  since: number;
  /** The file system's error code (ENOSPC, EACCES, EROFS, ...), `bad_marker`, or UNSHARED_DIR. */
  code: string;
}

export type ArchiveRuleFacts =
  | { kind: 'recording_lost'; bySerial: ReadonlyMap<string, LostRecordings> }
  | { kind: 'archive_failing'; failing: ArchiveFailure | null };

/** The facts of every archive rule among `rules`, at `now` (boxwatch's clock). */
export async function readArchiveFacts(repo: RecordingsRepo, rules: readonly RuleConfig[], now: number, failing: ArchiveFailure | null): Promise<Map<string, ArchiveRuleFacts>> {
  const byRule = new Map<string, ArchiveRuleFacts>();
  for (const rule of rules) {
    if (rule.kind === 'recording_lost') byRule.set(rule.name, { kind: rule.kind, bySerial: await repo.lostSince(now - rule.window) });
    else if (rule.kind === 'archive_failing') byRule.set(rule.name, { kind: rule.kind, failing });
  }
  return byRule;
}

/**
 * The call rules' facts with the archive rules' added (either may be missing: without fresh call
 * facts the call rules say unknown, the archive rules are judged all the same).
 */
export function withArchiveFacts(calls: CallFacts | null, archive: { at: number; byRule: ReadonlyMap<string, ArchiveRuleFacts> } | null): CallFacts | null {
  if (archive === null) return calls;
  if (calls === null) return { at: archive.at, byRule: archive.byRule };
  return { at: calls.at, byRule: new Map([...calls.byRule, ...archive.byRule]) };
}

/**
 * The archive rules' facts as the cycle of one account judges them. The archive is the process's
 * own (one directory, one failure), so `archive_failing` is judged once per process: only in the
 * cycle of the account `judgesFailure(rule)` says (app.ts: the first account this process works
 * for that the rule applies to); every other account's cycle sees no failure, so it raises none
 * and resolves one it raised before (an earlier lease, an older version). `recording_lost` is per
 * box: every account's cycle judges its own boxes.
 */
export function archiveFactsFor(
  facts: { at: number; byRule: ReadonlyMap<string, ArchiveRuleFacts> } | null,
  judgesFailure: (rule: string) => boolean,
): { at: number; byRule: ReadonlyMap<string, ArchiveRuleFacts> } | null {
  if (facts === null) return null;
  const byRule = new Map(facts.byRule);
  for (const [name, f] of byRule) if (f.kind === 'archive_failing' && f.failing !== null && !judgesFailure(name)) byRule.set(name, { kind: f.kind, failing: null });
  return { at: facts.at, byRule };
}
