/**
 * `archive_failing`: the recording archive cannot write its files (disk full, read-only file
 * system, no permission): one alert for the fleet (serial ''). Active from the first failed write
 * until a write succeeds again (facts from the archive: src/rules/facts.ts). Also active, with
 * the code `unshared_dir`, while another live replica archives into another directory than this
 * process's `archive.dir` (its heartbeat says which: replicas whose archive.dir is not shared,
 * their files on a disk this process cannot see; src/archive/archiver.ts). Recordings listed in
 * another directory no live replica announces (an earlier archive.dir, a replica gone) are only
 * listed, not an alert.
 */
import { UNSHARED_DIR } from './facts.js';
import type { RuleOfKind } from '../config/schema.js';
import type { FleetContext, RuleResult } from './types.js';

const MEANING: Readonly<Record<string, string>> = {
  ENOSPC: 'disk full',
  EDQUOT: 'disk quota exceeded',
  EROFS: 'read-only file system',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EIO: 'input/output error',
  bad_marker: 'archive.dir/.boxwatch-archive is not a boxwatch archive marker; remove it if nothing else wrote it',
};

export function evaluateArchiveFailing(rule: RuleOfKind<'archive_failing'>, ctx: FleetContext): RuleResult {
  const facts = ctx.calls?.byRule.get(rule.name);
  if (facts?.kind !== 'archive_failing') return { condition: 'unknown', value: null, summary: 'no fresh archive data' };
  const threshold = 'a recording file could not be written';
  if (facts.failing === null) return { condition: 'inactive', value: null, threshold, summary: 'the archive writes its files' };
  const { code } = facts.failing;
  if (code === UNSHARED_DIR) {
    return {
      condition: 'active',
      value: code,
      threshold: 'no other live replica archiving into another directory',
      summary: 'recordings are being archived into another archive directory than this archive.dir, whose files this process cannot see: archive.dir is not shared between the replicas (give them one shared archive.dir)',
    };
  }
  const meaning = MEANING[code];
  return {
    condition: 'active',
    value: code,
    threshold,
    summary: `the recording archive cannot write its files: ${code}${meaning === undefined ? '' : ` (${meaning})`}; recordings are kept at the vendor and retried`,
  };
}
