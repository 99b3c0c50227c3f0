/**
 * `boxwatch recordings verify`: every archived recording and its sidecar read back and checked
 * against the SHA-256 recorded when it was written. Read-only; safe while the daemon runs.
 */
import { join } from 'node:path';
import type { RecordingsRepo } from '../store/recordings-repo.js';
import { fileSha256 } from './files.js';

export interface VerifyProblem {
  callId: string;
  /** Relative to the archive directory. */
  path: string;
  problem: 'missing' | 'mismatch';
}

export interface VerifyResult {
  /** Recordings checked (each with its sidecar). */
  recordings: number;
  problems: VerifyProblem[];
}

export async function verifyArchive(repo: Pick<RecordingsRepo, 'archivedAll'>, dir: string): Promise<VerifyResult> {
  const problems: VerifyProblem[] = [];
  const all = await repo.archivedAll();
  for (const r of all) {
    for (const [path, expected] of [
      [r.path, r.sha256],
      [r.sidecar, r.sidecarSha256],
    ] as const) {
      const actual = await fileSha256(join(dir, path));
      if (actual === null) problems.push({ callId: r.callId, path, problem: 'missing' });
      else if (actual !== expected) problems.push({ callId: r.callId, path, problem: 'mismatch' });
    }
  }
  return { recordings: all.length, problems };
}
