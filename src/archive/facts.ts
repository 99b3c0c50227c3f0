/**
 * What the archive rules judge (src/rules/recording-lost.ts, src/rules/archive-failing.ts): read
 * by the archive after each of its passes, handed to the alert pipeline beside the call rules'
 * facts (`withArchiveFacts`), and judged in every poll cycle like them.
 */
import type { CallFacts } from '../calls/health.js';
import type { RuleConfig } from '../config/schema.js';
import type { LostRecordings, RecordingsRepo } from '../store/recordings-repo.js';

/** Why the archive cannot write its files, since when (boxwatch's clock). */
export interface ArchiveFailure {
  since: number;
  /** The file system's error code (ENOSPC, EACCES, EROFS, ...). */
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
