/**
 * The archive has no schedule of its own: after every call sync the recordings it saw are offered
 * and a pass runs, not awaited by the sync (a slow download never holds up the next sync).
 */
import type { Registry } from 'prom-client';
import type { ArchiveConfig, CallsConfig } from '../config/schema.js';
import { createArchiver, type Archiver, type ArchiverDeps } from './archiver.js';
import { registerArchiveMetrics } from './metrics.js';

/** The call-sync observer that feeds the archive (null without an archive). */
export function archiveAfterSync(archive: Pick<Archiver, 'offer' | 'pass'> | null): ((account: string, result: { recordings: readonly { callId: string; url: string }[] }) => void) | null {
  if (archive === null) return null;
  return (_account, result) => {
    archive.offer(result.recordings);
    void archive.pass();
  };
}

/** The recording archive of an `archive:` section; null without one, or without `calls:` (no call sync finds recordings). */
export function archiveOf(config: { archive?: ArchiveConfig; calls?: CallsConfig }, deps: Omit<ArchiverDeps, 'config' | 'privacy' | 'metrics'> & { registry: Registry }): Archiver | null {
  if (config.archive === undefined || config.calls === undefined) return null;
  const { registry, ...rest } = deps;
  return createArchiver({ ...rest, config: config.archive, privacy: config.calls, metrics: registerArchiveMetrics(registry) });
}
