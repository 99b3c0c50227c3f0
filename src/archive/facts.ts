/**
 * What the archive rules judge (src/rules/recording-lost.ts, src/rules/archive-failing.ts): read
 * by the archive after each of its passes, handed to the alert pipeline beside the call rules'
 * facts (`withArchiveFacts`), and judged in every poll cycle like them.
 */
import type { CallFacts } from '../calls/health.js';
import type { RuleConfig } from '../config/schema.js';
import type { LostRecordings, RecordingsRepo } from '../store/recordings-repo.js';

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
