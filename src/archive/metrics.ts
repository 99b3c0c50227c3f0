/** The archive's metrics on the daemon's registry: recordings archived and lost, failed attempts, and the archive's size. */
import { Counter, Gauge, type Registry } from 'prom-client';

export interface ArchiveMetrics {
  archived(): void;
  lost(): void;
  failed(reason: string): void;
  size(totals: { files: number; bytes: number }): void;
  /** Archived recordings whose files are in another archive directory than this one's. */
  elsewhere(recordings: number): void;
}

export function registerArchiveMetrics(registry: Registry): ArchiveMetrics {
  const registers = [registry];
  const archived = new Counter({ name: 'boxwatch_recordings_archived_total', help: 'Recordings downloaded into the archive.', registers });
  const lost = new Counter({ name: 'boxwatch_recordings_lost_total', help: 'Recordings that expired at the vendor before they could be archived.', registers });
  const failed = new Counter({
    name: 'boxwatch_recording_attempts_failed_total',
    help: 'Failed attempts to archive a recording, by reason (network, gone, http_503, redirect_refused, ENOSPC, ...).',
    labelNames: ['reason'] as const,
    registers,
  });
  const bytes = new Gauge({ name: 'boxwatch_archive_bytes', help: 'Bytes of the recordings in the archive (sidecars not counted).', registers });
  const files = new Gauge({ name: 'boxwatch_archive_recordings', help: 'Recordings in the archive.', registers });
  const elsewhere = new Gauge({
    name: 'boxwatch_archive_recordings_elsewhere',
    help: 'Replicas: archived recordings whose files are in another archive directory than this replica’s (archive.dir not shared between the replicas); 0 when shared.',
    registers,
  });
  return {
    archived: () => archived.inc(),
    lost: () => lost.inc(),
    failed: (reason) => failed.inc({ reason }),
    size(t) {
      bytes.set(t.bytes);
      files.set(t.files);
    },
    elsewhere: (n) => elsewhere.set(n),
  };
}
