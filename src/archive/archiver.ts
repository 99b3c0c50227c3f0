/**
 * The recording archive, a stage of its own beside the call sync (docs/calls.md, "Recording
 * archive"): it owns downloading every `available` recording into `archive.dir`, the retries, the
 * move of a recording to `archived` or `expired`, retention of the files, and the facts of the
 * archive rules. The app runs a pass after every call sync without waiting for it: a slow or
 * failing archive never holds up a call sync or a poll cycle, and a pass never throws.
 *
 * One attempt: the recording URL the call sync just read (kept in memory, used once), else a fresh
 * one from call details; no URL any more means the vendor let it expire: `expired` and the
 * `recording_lost` rule. The download (download.ts) is written atomically with its sidecar
 * (files.ts) and their SHA-256 recorded. A failed attempt is retried after the project's jittered
 * backoff (src/backoff.ts), re-reading call details each time, until it succeeds or the URL is gone.
 * A write the file system refuses (ENOSPC, EACCES, ...) also marks the archive failing
 * (`archive_failing`) until a write succeeds again.
 *
 * Which directory (identity.ts): the archive's id, from the marker file of `archive.dir`, is
 * recorded with every recording archived, and a replica announces it with its heartbeats
 * (src/cluster/; read at its start, `identify`, so a standby that runs no pass announces it too). Retention deletes only the recordings of this archive (whose files it knows are
 * in its directory); recordings of another archive directory in the database (replicas whose
 * `archive.dir` is not one shared storage, or an earlier `archive.dir`) are left to whoever writes
 * there. While another live replica announces another archive directory than this one
 * (`replicaArchives`), archive.dir is not shared: the archive is failing with `unshared_dir`
 * (`archive_failing`, from the next pass on, whether calls come or not; cleared at the first pass
 * after which no live replica announces one: the other replica stopped, or was given the shared
 * directory). Recordings listed in another directory alone are no alert (a single daemon's earlier
 * `archive.dir`, a replica gone): every pass probes for them (index lookups, two per other
 * directory), each such directory is said once in the log (a warning) and they are counted in
 * `boxwatch_archive_recordings_elsewhere` (a count over every archived recording: when they
 * appear, then hourly; 0 as soon as there are none). When this
 * archive gets a new id (its marker is made), the recordings whose files it finds in its directory
 * become its, whatever archive they were listed in (a directory moved without its marker).
 *
 * Calls of several accounts: each recording's call details are read through its own account's
 * client (`clientOf`, from the account of its call key); a call of an account this process does
 * not work for (replicas: not led here) is left to the replica that leads it.
 */
import { join } from 'node:path';
import { accountOf, splitBoxKey } from '../box-id.js';
import { jitteredBackoff } from '../backoff.js';
import type { Clock } from '../clock.js';
import type { ArchiveConfig, CallsConfig, RuleConfig } from '../config/schema.js';
import { BoxwatchError, errorMessage } from '../errors.js';
import type { GatewayClient } from '../gateway/types.js';
import type { Logger } from '../log.js';
import { mapWithConcurrency } from '../poller/pool.js';
import type { DueRecording, RecordingsRepo } from '../domain/recordings.js';
import type { Awaitable } from '../awaitable.js';
import type { ReplicaArchive } from '../domain/leases.js';
import { DownloadError, downloadAgent, openRecording } from './download.js';
import { readArchiveFacts, UNSHARED_DIR, type ArchiveFailure, type ArchiveRuleFacts } from '../rules/facts.js';
import { archivePaths, fsErrorCode, holdsRecording, nodeFs, recordingExtension, removeWithEmptyParents, STORAGE_ERRORS, writeAtomically, type ArchiveFs } from './files.js';
import type { ArchiveMetrics } from './metrics.js';
import { sidecarOf } from './sidecar.js';
import { Throttle } from './throttle.js';
import { archiveIdentity } from './identity.js';
import { isoTime } from '../time-format.js';

/** Backoff between attempts at one recording: up to 30 s after the first failure, doubling to 15 min. */
export const RETRY_BASE_MS = 30_000;
export const RETRY_MAX_MS = 15 * 60_000;
/** Recordings attempted per pass at most (the rest wait for the next pass). */
const MAX_PER_PASS = 200;
/**
 * Retention runs at most this often (daemon's clock), deleting at most RETENTION_BATCH files per
 * run; the recordings of other archive directories, while there are any, are counted as often.
 */
const RETENTION_EVERY_MS = 60 * 60_000;
const RETENTION_BATCH = 1_000;
/** Fresh recording URLs kept in memory at most (the oldest are forgotten: call details are read again). */
const MAX_FRESH_URLS = 10_000;

export interface ArchiverDeps {
  config: ArchiveConfig;
  /** What the sidecar may show (calls.store_numbers, calls.store_transcripts). */
  privacy: Pick<CallsConfig, 'storeNumbers' | 'storeTranscripts'>;
  /** The configured rules (the archive rules among them get their facts after each pass). */
  rules: readonly RuleConfig[];
  repo: RecordingsRepo;
  /** The gateway client of an account (undefined: not this process's to work for). */
  clientOf: (account: string) => Pick<GatewayClient, 'getCall'> | undefined;
  clock: Clock;
  logger: Logger;
  /** Per download: headers, and each pause in the body. */
  timeoutMs: number;
  metrics?: ArchiveMetrics;
  /**
   * Replicas (`cluster:`): the archive directories the other live replicas announce with their
   * heartbeats (src/cluster/replica.ts). Absent: this process is the database's only daemon, so
   * another directory in the database is an earlier archive.dir, never one written now.
   */
  replicaArchives?: () => Awaitable<readonly ReplicaArchive[]>;
  /** The file-system boundary (tests make the disk fill up). */
  fs?: ArchiveFs;
  /** Aborts the downloads in flight (daemon stopping). */
  signal?: AbortSignal;
  random?: () => number;
}

export interface ArchivePassResult {
  archived: number;
  lost: number;
  failed: number;
  /** Archived files deleted by retention. */
  deleted: number;
}

export interface Archiver {
  /** Recording URLs the call sync has just read: kept in memory (never stored) for the next attempt. */
  offer(urls: readonly { callId: string; url: string }[]): void;
  /**
   * One pass: retention when due, then the recordings due for an attempt, then the archive rules'
   * facts. Never rejects. Called while a pass runs, it resolves after that pass and one more.
   */
  pass(): Promise<ArchivePassResult>;
  /** The archive rules' facts from the last pass (null before the first). */
  facts(): { at: number; byRule: ReadonlyMap<string, ArchiveRuleFacts> } | null;
  /** This archive's id (identity.ts) once a pass or `identify` has read or made it; null before. A replica announces it. */
  id(): string | null;
  /**
   * Reads (or makes) this archive's id now, as a pass does first; never rejects (null while the
   * marker cannot be made or read). A replica calls it at start, so that it announces its
   * directory even while it leads no account (a standby runs no pass).
   */
  identify(): Promise<string | null>;
  /** Waits for the pass in flight and closes the download connections. */
  close(): Promise<void>;
}

export function createArchiver(deps: ArchiverDeps): Archiver {
  const { config, repo, clock, logger } = deps;
  const fs = deps.fs ?? nodeFs;
  const agent = downloadAgent(config.concurrency, deps.timeoutMs);
  const throttle = new Throttle(config.bandwidth, clock);
  const fresh = new Map<string, string>();
  let failing: ArchiveFailure | null = null;
  /** While another live replica archives into another directory (`lookElsewhere`): archive_failing, `unshared_dir`. */
  let unshared: ArchiveFailure | null = null;
  /** Since when the database lists recordings in another archive directory (null: none). */
  let elsewhereSince: number | null = null;
  let facts: { at: number; byRule: ReadonlyMap<string, ArchiveRuleFacts> } | null = null;
  let lastRetention = Number.NEGATIVE_INFINITY;
  let lastElsewhere = Number.NEGATIVE_INFINITY;
  let running: Promise<ArchivePassResult> | null = null;
  /** This archive's id (identity.ts), once read or made. */
  let archiveId: string | null = null;
  /** The other archive directories with recordings said in the log (a warning each, once). */
  const elsewhereSaid = new Set<string>();
  /** The other live replicas' directories said in the log (`replica archive`: an error each, again if one goes and comes back). */
  const unsharedSaid = new Set<string>();
  let again: Promise<ArchivePassResult> | null = null;
  /** The identity step in flight (`identify`): a pass and a replica's start share it. */
  let identifying: Promise<string | null> | null = null;

  const storageFailed = (code: string, err: unknown): void => {
    if (failing === null) {
      logger.error({ code, dir: config.dir, err: errorMessage(err) }, 'the recording archive cannot write its files; recordings are retried while the vendor keeps them');
      failing = { since: clock.now(), code };
    } else if (failing.code !== code) failing = { since: failing.since, code };
  };

  /** A write into the archive (or its marker) succeeded: it is no longer failing. */
  const storageWorks = (): void => {
    if (failing === null) return;
    logger.info({ dir: config.dir, since: isoTime(failing.since) }, 'the recording archive writes its files again');
    failing = null;
  };

  /** The vendor no longer has the recording: it is lost. */
  const lose = async (d: DueRecording): Promise<void> => {
    await repo.lost(d.call.callId, d.call.serial, clock.now());
    deps.metrics?.lost();
    logger.warn({ call: d.call.callId, box: d.call.serial, attempts: d.attempts }, 'recording lost: it expired at the vendor before it could be archived');
  };

  /** One attempt at one recording: 'archived', 'lost' or 'failed'. Never throws (a pass must never leave an attempt running behind it). */
  const attempt = async (d: DueRecording, archive: string): Promise<'archived' | 'lost' | 'failed' | 'aborted'> => {
    const { call } = d;
    let url = fresh.get(call.callId);
    fresh.delete(call.callId);
    try {
      if (url === undefined) {
        let details;
        const { account, serial: callId } = splitBoxKey(call.callId);
        try {
          details = await (deps.clientOf(account) as Pick<GatewayClient, 'getCall'>).getCall(callId, { signal: deps.signal });
        } catch (err) {
          if (err instanceof BoxwatchError && err.code === 'call_not_found') {
            await lose(d);
            return 'lost';
          }
          throw err;
        }
        if (details.audio_record_url === undefined || details.audio_record_url === '') {
          await lose(d);
          return 'lost';
        }
        url = details.audio_record_url;
      }
      const opened = await openRecording(url, { agent, allowHosts: config.allowHosts, maxBytes: config.maxSize, timeoutMs: deps.timeoutMs, throttle, ...(deps.signal && { signal: deps.signal }) });
      const paths = archivePaths(call.callId, call.startedAt, recordingExtension(opened.url, opened.contentType));
      let rec;
      try {
        rec = await writeAtomically(fs, join(config.dir, paths.recording), opened.body);
      } finally {
        opened.close(); // a body the file could not take (not even created) must not hold its connection
      }
      const archivedAt = clock.now();
      const sidecar = sidecarOf(call, { file: paths.recording.split('/').pop() as string, ...rec, contentType: opened.contentType, archivedAt }, deps.privacy);
      const side = await writeAtomically(fs, join(config.dir, paths.sidecar), [Buffer.from(`${JSON.stringify(sidecar, null, 2)}\n`)]);
      await repo.archived({ callId: call.callId, serial: call.serial, path: paths.recording, sha256: rec.sha256, bytes: rec.bytes, sidecar: paths.sidecar, sidecarSha256: side.sha256, archivedAt, archive });
      storageWorks();
      deps.metrics?.archived();
      return 'archived';
    } catch (err) {
      if (deps.signal?.aborted) return 'aborted'; // stopping: nothing recorded, the next start tries again
      const fsCode = err instanceof BoxwatchError ? undefined : fsErrorCode(err);
      const code = err instanceof BoxwatchError ? (err instanceof DownloadError ? err.code : `gateway_${err.code}`) : (fsCode ?? 'internal');
      if (fsCode !== undefined && STORAGE_ERRORS.has(fsCode)) storageFailed(fsCode, err);
      const attempts = d.attempts + 1;
      const next = clock.now() + jitteredBackoff(attempts, RETRY_BASE_MS, RETRY_MAX_MS, deps.random);
      deps.metrics?.failed(code);
      try {
        await repo.failed(call.callId, call.serial, next, code);
      } catch (dbErr) {
        // The database refused too (locked, full): the recording stays due and is tried next pass.
        logger.error({ call: call.callId, code: (dbErr as { code?: unknown }).code, err: errorMessage(dbErr) }, 'cannot record a failed recording attempt');
      }
      const fields = { call: call.callId, box: call.serial, code, attempts, err: errorMessage(err) };
      if (attempts === 1) logger.warn(fields, 'recording not archived yet; it is retried until the vendor lets it expire');
      else logger.debug(fields, 'recording not archived yet');
      return 'failed';
    }
  };

  /** Deletes this archive's files older than the retention (at most RETENTION_BATCH per run). */
  const retention = async (now: number, archive: string): Promise<number> => {
    const old = await repo.archivedBefore(now - config.retention, RETENTION_BATCH, archive);
    const removed: string[] = [];
    for (const r of old) {
      try {
        await removeWithEmptyParents(fs, config.dir, r.path);
        await removeWithEmptyParents(fs, config.dir, r.sidecar);
        removed.push(r.callId);
      } catch (err) {
        logger.error({ path: r.path, code: fsErrorCode(err), err: errorMessage(err) }, 'archive retention could not delete a file; will try again');
      }
    }
    if (removed.length > 0) {
      await repo.remove(removed);
      logger.info({ deleted: removed.length }, 'archive retention deleted recordings older than archive.retention');
    }
    await repo.pruneOrphans();
    return removed.length;
  };

  /**
   * This archive's id, read from its directory's marker or made. A marker made anew (a new
   * directory, an upgrade from before archive ids, or a directory whose marker was lost: moved
   * with `mv dir/* new/`, restored without dotfiles) takes every recording whose files are in the
   * directory (holdsRecording: the size and SHA-256 recorded), whatever archive it was listed in:
   * a moved directory gets its recordings back, while replicas with a directory each never claim
   * each other's (their files are on another disk). Null while the marker cannot be made or read:
   * the archive is failing (`archive_failing`), and the pass archives nothing.
   */
  const identity = async (): Promise<string | null> => {
    if (archiveId !== null) return archiveId;
    try {
      const { id, created } = await archiveIdentity(fs, config.dir, clock.now());
      if (created) {
        const here: string[] = [];
        for (const r of await repo.archivedAll()) if (r.archive !== id && (await holdsRecording(config.dir, r))) here.push(r.callId);
        await repo.claim(here, id);
        logger.info({ dir: config.dir, archive: id, recordings: here.length }, 'the recording archive has a new id (the .boxwatch-archive file in archive.dir); the recordings whose files are here are recorded as its');
      }
      archiveId = id;
      storageWorks();
    } catch (err) {
      const code = fsErrorCode(err);
      if (code !== undefined && STORAGE_ERRORS.has(code)) storageFailed(code, err);
      else storageFailed('bad_marker', err); // not a marker boxwatch wrote (its error names the file)
    }
    return archiveId;
  };

  /** `identity`, one at a time. */
  const identify = (): Promise<string | null> =>
    (identifying ??= identity().finally(() => {
      identifying = null;
    }));

  /**
   * Other archive directories. While another live replica announces one (`replicaArchives`),
   * archive.dir is not one storage shared by the replicas: `unshared_dir`, said in the log at
   * error per replica and directory. Recordings of other directories in the database (probed
   * every pass: `otherArchives`, index lookups) are counted (the gauge) and said in the log (a
   * warning, once per directory) when they appear, then counted at most hourly while they stay.
   */
  const lookElsewhere = async (archive: string, now: number): Promise<void> => {
    const unsharedWith = ((await deps.replicaArchives?.()) ?? []).filter((r) => r.archive !== archive);
    if (unsharedWith.length > 0) unshared ??= { since: now, code: UNSHARED_DIR };
    else if (unshared !== null) {
      unshared = null;
      logger.info({ dir: config.dir, archive }, 'no other live replica archives into another directory any more: archive_failing (unshared_dir) ends');
    }
    const live = new Set(unsharedWith.map((r) => `${r.replica} ${r.archive}`));
    for (const key of unsharedSaid) if (!live.has(key)) unsharedSaid.delete(key); // said again if it comes back
    for (const r of unsharedWith) {
      const key = `${r.replica} ${r.archive}`;
      if (unsharedSaid.has(key)) continue;
      unsharedSaid.add(key);
      logger.error(
        { dir: config.dir, archive, replica: r.replica, other: r.archive },
        'archive.dir is not shared between the replicas: another live replica archives into another directory, whose files this replica cannot see; its retention leaves them to whoever writes there (docs/operations.md, "The recording archive with replicas")',
      );
    }
    const others = await repo.otherArchives(archive);
    if (others.length === 0) {
      if (elsewhereSince !== null) {
        logger.info({ dir: config.dir, archive }, 'the database lists no recordings in another archive directory any more');
        elsewhereSince = null;
        elsewhereSaid.clear();
        deps.metrics?.elsewhere(0);
      }
      return;
    }
    const appeared = elsewhereSince === null;
    elsewhereSince ??= now;
    const newlySaid = others.filter((o) => !elsewhereSaid.has(o.archive));
    if (!appeared && newlySaid.length === 0 && now - lastElsewhere < RETENTION_EVERY_MS) return;
    lastElsewhere = now;
    const counts = new Map((await repo.archives()).map((a) => [a.archive, a.recordings]));
    deps.metrics?.elsewhere(others.reduce((n, o) => n + (counts.get(o.archive) ?? 0), 0));
    for (const o of newlySaid) {
      elsewhereSaid.add(o.archive);
      logger.warn(
        { dir: config.dir, archive, other: o.archive, recordings: counts.get(o.archive) ?? 0, lastArchivedAt: isoTime(o.lastArchivedAt) },
        'the database lists recordings in another archive directory (another replica’s, or an earlier archive.dir): this replica cannot see their files and its retention leaves them (docs/operations.md, "The recording archive with replicas")',
      );
    }
  };

  const runPass = async (): Promise<ArchivePassResult> => {
    const result: ArchivePassResult = { archived: 0, lost: 0, failed: 0, deleted: 0 };
    try {
      const now = clock.now();
      const archive = await identify();
      if (archive !== null) {
        if (now - lastRetention >= RETENTION_EVERY_MS) {
          lastRetention = now;
          result.deleted = await retention(now, archive);
        }
        const due = (await repo.due(now, MAX_PER_PASS)).filter((d) => deps.clientOf(accountOf(d.call.callId)) !== undefined);
        const outcomes = await mapWithConcurrency(due, config.concurrency, (d) => attempt(d, archive));
        for (const o of outcomes) if (o !== 'aborted') result[o] += 1;
        await lookElsewhere(archive, now);
      }
      // A file system that refuses writes says more than recordings in another directory.
      facts = { at: clock.now(), byRule: await readArchiveFacts(repo, deps.rules, clock.now(), failing ?? unshared) };
      deps.metrics?.size(await repo.totals());
    } catch (err) {
      // The database refused (locked, full): nothing of this attempt's outcome was lost on the
      // vendor's side; the next pass reads again what is due.
      if (!deps.signal?.aborted) logger.error({ code: (err as { code?: unknown }).code, err: errorMessage(err) }, 'archive pass failed; the next pass tries again');
    }
    return result;
  };

  const pass = (): Promise<ArchivePassResult> => {
    if (running === null) {
      running = runPass().finally(() => {
        running = null;
      });
      return running;
    }
    again ??= running.then(() => {
      again = null;
      return pass();
    });
    return again;
  };

  return {
    offer(urls) {
      for (const { callId, url } of urls) {
        fresh.delete(callId);
        fresh.set(callId, url);
      }
      for (const key of fresh.keys()) {
        if (fresh.size <= MAX_FRESH_URLS) break;
        fresh.delete(key);
      }
    },
    pass,
    facts: () => facts,
    id: () => archiveId,
    identify,
    async close() {
      await again;
      await running;
      await identifying;
      await agent.destroy();
    },
  };
}
