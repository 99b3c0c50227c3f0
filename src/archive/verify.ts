/**
 * `boxwatch recordings verify`: every archived recording and its sidecar read back and checked
 * against the SHA-256 recorded when it was written. Read-only; safe while the daemon runs.
 * Recordings the database says are in another archive directory (another id than the marker of
 * `dir`: replicas whose archive.dir is not shared, identity.ts) are checked here only when their
 * recording is here (files.ts, `holdsRecording`: a directory moved without its marker, not yet
 * claimed by the daemon); the others are counted per archive (`elsewhere`), not reported missing.
 */
import { join } from 'node:path';
import type { RecordingsRepo } from '../domain/recordings.js';
import { fileSha256, holdsRecording } from './files.js';
import { readArchiveId } from './identity.js';

export interface VerifyProblem {
  callId: string;
  /** Relative to the archive directory. */
  path: string;
  problem: 'missing' | 'mismatch';
}

export interface VerifyResult {
  /** The id of the archive in `dir` (null: its directory has no marker yet). */
  archive: string | null;
  /** Recordings checked (each with its sidecar). */
  recordings: number;
  problems: VerifyProblem[];
  /** Recordings in other archive directories, per archive id: not checked here. */
  elsewhere: { archive: string; recordings: number }[];
}

export async function verifyArchive(repo: Pick<RecordingsRepo, 'archivedAll'>, dir: string): Promise<VerifyResult> {
  const archive = await readArchiveId(dir);
  const problems: VerifyProblem[] = [];
  const elsewhere = new Map<string, number>();
  let recordings = 0;
  for (const r of await repo.archivedAll()) {
    if (archive !== null && r.archive !== null && r.archive !== archive && !(await holdsRecording(dir, r))) {
      elsewhere.set(r.archive, (elsewhere.get(r.archive) ?? 0) + 1);
      continue;
    }
    recordings += 1;
    for (const [path, expected] of [
      [r.path, r.sha256],
      [r.sidecar, r.sidecarSha256],
    ] as const) {
      const actual = await fileSha256(join(dir, path));
      if (actual === null) problems.push({ callId: r.callId, path, problem: 'missing' });
      else if (actual !== expected) problems.push({ callId: r.callId, path, problem: 'mismatch' });
    }
  }
  return { archive, recordings, problems, elsewhere: [...elsewhere].sort(([a], [b]) => (a < b ? -1 : 1)).map(([id, n]) => ({ archive: id, recordings: n })) };
}
