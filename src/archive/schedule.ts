/**
 * The archive has no schedule of its own: after every call sync the recordings it saw are offered
 * and a pass runs, not awaited by the sync (a slow download never holds up the next sync).
 */
import type { Archiver } from './archiver.js';

/** The call-sync observer that feeds the archive (null without an archive). */
export function archiveAfterSync(archive: Pick<Archiver, 'offer' | 'pass'> | null): ((account: string, result: { recordings: readonly { callId: string; url: string }[] }) => void) | null {
  if (archive === null) return null;
  return (_account, result) => {
    archive.offer(result.recordings);
    void archive.pass();
  };
}
