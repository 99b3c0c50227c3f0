/**
 * The archive's identity (src/archive/identity.ts) with the archiver on a real SQLite file and
 * real directories:
 * - the marker file is made once, atomically: two made at once on one directory (50 times over)
 *   get the one id, never a half-written marker; a write that fails (ENOSPC) leaves no marker and
 *   raises archive_failing, and once there is room the next pass makes it; an empty marker (a
 *   crash of an older boxwatch) is replaced; a file that is not a marker raises archive_failing;
 * - a new marker takes the recordings whose files are in its directory (size and SHA-256 as
 *   recorded), whatever archive they were listed in: those of before archive ids, and those of a
 *   directory moved without its marker (`mv old/* new/`), which retention then deletes and verify
 *   checks; recordings whose files are not there (another replica's disk) stay as they were;
 * - another live replica announcing another archive directory with its heartbeat (its archive.dir
 *   is not shared; real replica rows of the SQLite file) raises archive_failing with `unshared_dir`
 *   at the next pass, logged once, for as long as that replica runs, whether calls come or not
 *   (before: it ended a day after the last recording there, and came back with the next one); it
 *   ends at the first pass after that replica stops or dies. Recordings listed in another
 *   directory are counted in the gauge then and hourly and said once (a warning), and alone are
 *   no alert: a new archive.dir (a dead disk replaced) does not alert (before: until a day after
 *   the old one's last recording); the gauge and `recordings verify` list them; cleared entirely
 *   at the first pass that finds none; a refused write's code comes first.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { Registry } from 'prom-client';
import { createArchiver, nodeFs, registerArchiveMetrics, type ArchiveFs, type ArchiveMetrics } from '../../src/archive/index.js';
import { ARCHIVE_MARKER, archiveIdentity, readArchiveId } from '../../src/archive/identity.js';
import { verifyArchive } from '../../src/archive/verify.js';
import { otherReplicaArchives } from '../../src/domain/leases.js';
import { parseConfig } from '../../src/config/index.js';
import { createLogger, silentLogger, type Logger } from '../../src/log.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import type { RecordingsRepo } from '../../src/domain/recordings.js';
import { runBuilt } from '../helpers/cli-process.js';
import { FakeClock } from '../helpers/fake-clock.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = Date.parse('2026-03-01T12:00:00Z');
let dir: string | undefined;
let store: SqliteStore | undefined;
afterEach(() => {
  store?.close();
  store = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function tempDir(): string {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-archive-id-'));
  return dir;
}

/** The lease time of the replicas in these tests (`cluster.lease`): a replica is live while its heartbeat is younger. */
const LEASE_MS = 30_000;

/** replica-b, another replica on the same database, beats now announcing its archive directory (as its coordinator does). */
function replicaBeats(clock: FakeClock, archive: string): void {
  store!.leases.heartbeat({ id: 'replica-b', host: 'vm2', pid: 202, archive }, clock.now());
}

/**
 * An archiver on `archiveDir`; with `replicas`, that of replica-a, which reads the archive
 * directories the other live replicas announce from the store's replica rows (as src/cluster/replica.ts does).
 */
function archiverOf(archiveDir: string, clock: FakeClock, o: { fs?: ArchiveFs; repo?: RecordingsRepo; metrics?: ArchiveMetrics; logger?: Logger; replicas?: boolean } = {}) {
  const config = parseConfig(
    `gateway: { base_url: "http://127.0.0.1:9", secret_key: k }\ncalls: {}\narchive: { dir: "${archiveDir}", retention: 30d }\nrules:\n  - { name: archive-failing, kind: archive_failing, severity: critical }\n`,
    {},
  );
  return createArchiver({
    config: config.archive!,
    privacy: config.calls!,
    rules: config.rules,
    repo: o.repo ?? store!.recordings,
    clientOf: () => undefined,
    clock,
    logger: o.logger ?? silentLogger,
    timeoutMs: 1_000,
    ...(o.fs && { fs: o.fs }),
    ...(o.metrics && { metrics: o.metrics }),
    ...(o.replicas === true && { replicaArchives: () => otherReplicaArchives(store!.leases.replicas(), 'replica-a', clock.now(), LEASE_MS) }),
  });
}

/** The archive_failing facts of the archiver's last pass: the failure's code, or null. */
function failingCode(archiver: ReturnType<typeof archiverOf>): string | null {
  const f = archiver.facts()?.byRule.get('archive-failing');
  if (f?.kind !== 'archive_failing') throw new Error('no archive_failing facts');
  return f.failing?.code ?? null;
}

/** The id of `archiveDir`'s marker, made by an archiver's first pass (then closed). */
async function markedBy(archiveDir: string, clock: FakeClock): Promise<string> {
  const archiver = archiverOf(archiveDir, clock);
  await archiver.pass();
  await archiver.close();
  return (await readArchiveId(archiveDir)) as string;
}

/** A recording with its sidecar written under `archiveDir`, and its row (archived with `archive`). */
function recordingIn(archiveDir: string | null, callId: string, archivedAt: number, archive: string | null): void {
  const path = `2026/04/24/${callId}.wav`;
  const sidecar = `2026/04/24/${callId}.json`;
  const audio = Buffer.from(`audio of ${callId}`);
  const side = Buffer.from(`{"call":"${callId}"}\n`);
  if (archiveDir !== null) {
    mkdirSync(dirname(join(archiveDir, path)), { recursive: true });
    writeFileSync(join(archiveDir, path), audio);
    writeFileSync(join(archiveDir, sidecar), side);
  }
  const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
  store!.recordings.archived({ callId, serial: 'BX-1', path, sha256: sha(audio), bytes: audio.length, sidecar, sidecarSha256: sha(side), archivedAt, archive });
}

it('a directory gets one id, made once: two made at once (50 times) read the same whole one, later ones read it too', async () => {
  const root = tempDir();
  for (let i = 0; i < 50; i++) {
    const archive = join(root, `recordings-${i}`);
    expect(await readArchiveId(archive)).toBeNull();
    const [first, second] = await Promise.all([archiveIdentity(nodeFs, archive, NOW), archiveIdentity(nodeFs, archive, NOW)]);
    expect(first.id).toBe(second.id);
    expect([first.created, second.created].sort()).toEqual([false, true]);
    expect(first.id).toMatch(/^[A-Za-z0-9.-]+-[0-9a-f]{8}$/);
    expect(readdirSync(archive)).toEqual([ARCHIVE_MARKER]); // no temporary file left behind
  }
  const archive = join(root, 'recordings-0');
  const { id } = await archiveIdentity(nodeFs, archive, NOW);
  expect(await archiveIdentity(nodeFs, archive, NOW)).toEqual({ id, created: false });
  expect(await readArchiveId(archive)).toBe(id);
  expect(JSON.parse(readFileSync(join(archive, ARCHIVE_MARKER), 'utf8'))).toMatchObject({ id });
  // A file of that name boxwatch did not write is named, not taken for an id.
  writeFileSync(join(archive, ARCHIVE_MARKER), 'hello');
  await expect(archiveIdentity(nodeFs, archive, NOW)).rejects.toThrow(/\.boxwatch-archive is not a boxwatch archive marker/);
});

it('an empty marker (an older boxwatch crashed while writing it) counts as none and is replaced by a whole one', async () => {
  const archive = join(tempDir(), 'recordings');
  mkdirSync(archive);
  writeFileSync(join(archive, ARCHIVE_MARKER), '');
  expect(await readArchiveId(archive)).toBeNull();
  const made = await archiveIdentity(nodeFs, archive, NOW);
  expect(made.created).toBe(true);
  expect(await readArchiveId(archive)).toBe(made.id);
  expect(readdirSync(archive)).toEqual([ARCHIVE_MARKER]);
});

it('a marker write that fails (disk full) leaves no marker and raises archive_failing; once there is room the next pass makes it and the failure ends', async () => {
  const root = tempDir();
  const archiveDir = join(root, 'recordings');
  const clock = new FakeClock('2026-05-04T12:00:00Z');
  store = openStore(join(root, 'boxwatch.db'), { clock });
  let full = true;
  const fs: ArchiveFs = {
    ...nodeFs,
    async open(path, flags) {
      const file = await nodeFs.open(path, flags);
      if (flags !== 'wx') return file;
      return {
        async write(data, offset, length) {
          if (!full) return file.write(data, offset, length);
          await file.write(data, offset, Math.min(length, 5)); // part of it fits, then the disk is full
          throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        },
        sync: () => file.sync(),
        close: () => file.close(),
      };
    },
  };
  await expect(archiveIdentity(fs, archiveDir, NOW)).rejects.toMatchObject({ code: 'ENOSPC' });
  expect(readdirSync(archiveDir)).toEqual([]); // neither a marker nor a temporary file
  const archiver = archiverOf(archiveDir, clock, { fs });
  try {
    await archiver.pass();
    expect(failingCode(archiver)).toBe('ENOSPC');
    expect(existsSync(join(archiveDir, ARCHIVE_MARKER))).toBe(false);
    full = false;
    clock.advance(60_000);
    await archiver.pass();
    expect(await readArchiveId(archiveDir)).not.toBeNull();
    expect(failingCode(archiver)).toBeNull();
  } finally {
    await archiver.close();
  }
});

it('a marker file boxwatch did not write raises archive_failing (not only a log line)', async () => {
  const root = tempDir();
  const archiveDir = join(root, 'recordings');
  mkdirSync(archiveDir);
  writeFileSync(join(archiveDir, ARCHIVE_MARKER), 'hello');
  const clock = new FakeClock('2026-05-04T12:00:00Z');
  store = openStore(join(root, 'boxwatch.db'), { clock });
  const archiver = archiverOf(archiveDir, clock);
  try {
    await archiver.pass();
    expect(failingCode(archiver)).toBe('bad_marker');
    rmSync(join(archiveDir, ARCHIVE_MARKER)); // the operator removes it
    await archiver.pass();
    expect(failingCode(archiver)).toBeNull();
    expect(await readArchiveId(archiveDir)).not.toBeNull();
  } finally {
    await archiver.close();
  }
});

it('recordings archived before archive ids: those whose files are here become this archive’s (and retention deletes them), the others are kept', async () => {
  const root = tempDir();
  const archiveDir = join(root, 'recordings');
  const clock = new FakeClock('2026-05-04T12:00:00Z');
  store = openStore(join(root, 'boxwatch.db'), { clock });
  const old = clock.now() - 10 * DAY;
  recordingIn(archiveDir, 'c-1', old, null);
  recordingIn(null, 'c-2', old, null); // its files are on another host's disk
  recordingIn(archiveDir, 'c-3', old, null);
  const archiver = archiverOf(archiveDir, clock);
  try {
    await archiver.pass(); // the marker is made: c-1 and c-3 are this archive's
    const id = await readArchiveId(archiveDir);
    expect(id).not.toBeNull();
    expect(store.recordings.archivedAll().map((r) => [r.callId, r.archive])).toEqual([
      ['c-1', id],
      ['c-2', null],
      ['c-3', id],
    ]);
    clock.advance(30 * DAY); // every one past the retention; the next pass is an hour later
    clock.advance(3_600_000);
    expect((await archiver.pass()).deleted).toBe(2);
    expect(store.recordings.archivedAll().map((r) => r.callId)).toEqual(['c-2']);
    expect(existsSync(join(archiveDir, '2026'))).toBe(false);
  } finally {
    await archiver.close();
  }
});

it('a directory moved without its marker (`mv old/* new/`) takes its recordings back: verify checks them, retention deletes them, nothing is elsewhere; another disk’s recordings stay another’s', async () => {
  const root = tempDir();
  const oldDir = join(root, 'old');
  const newDir = join(root, 'new');
  const clock = new FakeClock('2026-05-04T12:00:00Z');
  store = openStore(join(root, 'boxwatch.db'), { clock });
  const oldId = await markedBy(oldDir, clock);
  recordingIn(oldDir, 'c-1', clock.now(), oldId);
  recordingIn(oldDir, 'c-2', clock.now(), oldId);
  recordingIn(null, 'c-3', clock.now(), 'vm2-0badcafe'); // another replica's, on its own disk
  // The operator moves the archive to a bigger disk: `mv old/* new/` (a shell glob skips dotfiles).
  mkdirSync(newDir);
  for (const name of readdirSync(oldDir)) if (!name.startsWith('.')) renameSync(join(oldDir, name), join(newDir, name));
  // Before the daemon starts on it, `recordings verify` already checks them here.
  const before = await verifyArchive(store.recordings, newDir);
  expect(before.archive).toBeNull(); // no marker: every row is looked for here
  expect(before.recordings).toBe(3);
  expect(before.problems.map((p) => [p.callId, p.problem])).toEqual([
    ['c-3', 'missing'],
    ['c-3', 'missing'],
  ]);
  const archiver = archiverOf(newDir, clock);
  try {
    await archiver.pass();
    const newId = (await readArchiveId(newDir)) as string;
    expect(newId).not.toBe(oldId);
    expect(store.recordings.archivedAll().map((r) => [r.callId, r.archive])).toEqual([
      ['c-1', newId],
      ['c-2', newId],
      ['c-3', 'vm2-0badcafe'],
    ]);
    expect(await verifyArchive(store.recordings, newDir)).toEqual({ archive: newId, recordings: 2, problems: [], elsewhere: [{ archive: 'vm2-0badcafe', recordings: 1 }] });
    clock.advance(31 * DAY);
    expect((await archiver.pass()).deleted).toBe(2);
    expect(existsSync(join(newDir, '2026'))).toBe(false);
    expect(store.recordings.archivedAll().map((r) => r.callId)).toEqual(['c-3']);
  } finally {
    await archiver.close();
  }
});

it('verify checks a recording listed in another archive whose file is in this directory (moved, not yet claimed), and does not call the others missing', async () => {
  const root = tempDir();
  const archiveDir = join(root, 'recordings');
  const clock = new FakeClock('2026-05-04T12:00:00Z');
  store = openStore(join(root, 'boxwatch.db'), { clock });
  const { id } = await archiveIdentity(nodeFs, archiveDir, NOW);
  recordingIn(archiveDir, 'c-1', clock.now(), id);
  recordingIn(archiveDir, 'c-2', clock.now(), 'old-0000aaaa'); // moved here from a directory whose marker was lost
  recordingIn(null, 'c-3', clock.now(), 'vm2-0badcafe');
  writeFileSync(join(archiveDir, '2026/04/24/c-2.json'), 'tampered');
  expect(await verifyArchive(store.recordings, archiveDir)).toEqual({
    archive: id,
    recordings: 2,
    problems: [{ callId: 'c-2', path: '2026/04/24/c-2.json', problem: 'mismatch' }],
    elsewhere: [{ archive: 'vm2-0badcafe', recordings: 1 }],
  });
});

it('another live replica archiving into another directory raises archive_failing (unshared_dir) at the next pass, for as long as it runs, calls or not; the recordings listed elsewhere are counted then and hourly; the alert ends at the first pass after that replica stops, the count and the log stay; cleared entirely at the first pass without any', async () => {
  const root = tempDir();
  const archiveDir = join(root, 'recordings');
  const clock = new FakeClock('2026-05-04T12:00:00Z');
  store = openStore(join(root, 'boxwatch.db'), { clock });
  const repo = store.recordings;
  let counted = 0;
  const counting: RecordingsRepo = Object.assign(Object.create(repo) as RecordingsRepo, {
    archives: () => {
      counted += 1;
      return repo.archives();
    },
  });
  const registry = new Registry();
  const lines: string[] = [];
  const logger = createLogger({
    destination: new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    }),
  });
  const archiver = archiverOf(archiveDir, clock, { repo: counting, metrics: registerArchiveMetrics(registry), logger, replicas: true });
  const elsewhere = async (): Promise<number> => (await registry.getSingleMetric('boxwatch_archive_recordings_elsewhere')?.get())?.values[0]?.value ?? Number.NaN;
  const said = (text: string): number => lines.filter((l) => l.includes(text)).length;
  try {
    await archiver.pass();
    const id = (await readArchiveId(archiveDir)) as string;
    recordingIn(archiveDir, 'c-1', clock.now(), id);
    recordingIn(null, 'c-0', clock.now(), null); // archived before archive ids: no other directory
    clock.advance(60_000);
    await archiver.pass();
    expect(failingCode(archiver)).toBeNull();
    expect(await elsewhere()).toBe(0);
    expect(counted).toBe(0); // nothing elsewhere: only the probe ran

    // Another replica starts, with a directory of its own: raised at the next pass, before any recording is archived there.
    clock.advance(60_000);
    replicaBeats(clock, 'vm2-0badcafe');
    await archiver.pass();
    expect(failingCode(archiver)).toBe('unshared_dir');
    expect(said('archive.dir is not shared between the replicas')).toBe(1);
    expect(await elsewhere()).toBe(0);
    // It archives into its directory: counted at the next pass, then hourly; a warning names the directory once.
    recordingIn(null, 'c-2', clock.now(), 'vm2-0badcafe');
    clock.advance(60_000);
    replicaBeats(clock, 'vm2-0badcafe');
    await archiver.pass();
    expect(failingCode(archiver)).toBe('unshared_dir');
    expect(await elsewhere()).toBe(1);
    expect(counted).toBe(1);
    for (let i = 0; i < 30; i++) {
      recordingIn(null, `c-${10 + i}`, clock.now(), 'vm2-0badcafe');
      clock.advance(60_000);
      replicaBeats(clock, 'vm2-0badcafe');
      await archiver.pass();
      expect(failingCode(archiver)).toBe('unshared_dir');
    }
    expect(counted).toBe(1);
    expect(await elsewhere()).toBe(1);
    clock.advance(30 * 60_000);
    replicaBeats(clock, 'vm2-0badcafe');
    await archiver.pass();
    expect(counted).toBe(2);
    expect(await elsewhere()).toBe(31);
    expect(said('archive.dir is not shared between the replicas')).toBe(1); // once per replica and directory
    expect(said('lists recordings in another archive directory')).toBe(1);

    // No call for two days: nothing is archived anywhere, the other replica still runs: still raised (before: it ended a day after its last recording).
    for (let h = 0; h < 48; h++) {
      clock.advance(HOUR);
      replicaBeats(clock, 'vm2-0badcafe');
      await archiver.pass();
      expect(failingCode(archiver)).toBe('unshared_dir');
    }
    expect(said('archive.dir is not shared between the replicas')).toBe(1);

    // The other replica stops (SIGTERM: it leaves): the alert ends at the next pass, with nothing
    // done to the database; its recordings stay listed (the gauge, `recordings verify`).
    store.leases.leave('replica-b');
    clock.advance(60_000);
    await archiver.pass();
    expect(failingCode(archiver)).toBeNull();
    expect(said('archive_failing (unshared_dir) ends')).toBe(1);
    for (let i = 0; i < 3; i++) {
      clock.advance(HOUR);
      await archiver.pass();
      expect(failingCode(archiver)).toBeNull();
    }
    expect(await elsewhere()).toBe(31); // still listed
    expect(said('lists recordings in another archive directory')).toBe(1);

    // It runs again: raised again at the next pass, said again. It dies (no leave): a lease time after its last heartbeat, the alert ends.
    replicaBeats(clock, 'vm2-0badcafe');
    clock.advance(1_000);
    await archiver.pass();
    expect(failingCode(archiver)).toBe('unshared_dir');
    expect(said('archive.dir is not shared between the replicas')).toBe(2);
    clock.advance(LEASE_MS);
    await archiver.pass();
    expect(failingCode(archiver)).toBeNull();
    expect(said('archive_failing (unshared_dir) ends')).toBe(2);

    // The operator moved those files into this directory and gave their rows its id: cleared at the next pass.
    store.recordings.claim(['c-2', ...Array.from({ length: 30 }, (_, i) => `c-${10 + i}`)], id);
    clock.advance(60_000);
    await archiver.pass();
    expect(failingCode(archiver)).toBeNull();
    expect(await elsewhere()).toBe(0);
    expect(said('no recordings in another archive directory any more')).toBe(1);
  } finally {
    await archiver.close();
  }
});

it('a new archive.dir (the old disk died) within the hour of the old one’s last recording: no archive_failing, for a single daemon and for a replica; the old directory’s recordings are listed elsewhere, with nothing done to the database', async () => {
  const root = tempDir();
  const oldDir = join(root, 'old');
  const clock = new FakeClock('2026-05-04T12:00:00Z');
  store = openStore(join(root, 'boxwatch.db'), { clock });
  const oldId = await markedBy(oldDir, clock);
  recordingIn(oldDir, 'c-1', clock.now() - HOUR, oldId);
  recordingIn(oldDir, 'c-2', clock.now(), oldId);
  rmSync(oldDir, { recursive: true }); // the disk died
  for (const [newDir, replicas] of [
    [join(root, 'new'), false], // a single daemon (no cluster:): another directory in the database is an earlier one
    [join(root, 'newer'), true], // a replica restarted with a new archive.dir: it announces the new one, nobody the old one
  ] as const) {
    clock.advance(10 * 60_000); // before: raised until a day after the old directory's last recording
    const archiver = archiverOf(newDir, clock, { replicas });
    try {
      await archiver.pass();
      expect(failingCode(archiver)).toBeNull();
      expect((await verifyArchive(store.recordings, newDir)).elsewhere).toEqual(expect.arrayContaining([{ archive: oldId, recordings: 2 }]));
    } finally {
      await archiver.close();
    }
  }
  // Once the new directory holds a recording, `boxwatch status` (the built CLI) lists both directories without blaming replicas: none runs.
  const newerId = (await readArchiveId(join(root, 'newer'))) as string;
  recordingIn(join(root, 'newer'), 'c-3', clock.now(), newerId);
  const status = await runBuilt(['status', '--db', join(root, 'boxwatch.db')]);
  expect(status.code, status.err).toBe(0);
  expect(status.out).toContain('archive: the database lists recordings in 2 archive directories (');
  expect(status.out).toContain(`${oldId}: 2`);
  expect(status.out).toContain(`${newerId}: 1`);
  expect(status.out).not.toContain('not shared');
});

it('the disk-full failure ended, another live replica archiving into another directory keeps archive_failing raised (unshared_dir)', async () => {
  const root = tempDir();
  const archiveDir = join(root, 'recordings');
  const clock = new FakeClock('2026-05-04T12:00:00Z');
  store = openStore(join(root, 'boxwatch.db'), { clock });
  let full = false;
  const fs: ArchiveFs = { ...nodeFs, mkdir: (path, options) => (full ? Promise.reject(Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' })) : nodeFs.mkdir(path, options)) };
  const first = archiverOf(archiveDir, clock, { fs, replicas: true });
  replicaBeats(clock, 'vm2-0badcafe');
  await first.pass();
  expect(failingCode(first)).toBe('unshared_dir');
  await first.close();
  rmSync(join(archiveDir, ARCHIVE_MARKER)); // the next start must make the marker again, and the disk is full
  full = true;
  const archiver = archiverOf(archiveDir, clock, { fs, replicas: true });
  try {
    await archiver.pass();
    expect(failingCode(archiver)).toBe('ENOSPC');
    full = false;
    await archiver.pass();
    expect(failingCode(archiver)).toBe('unshared_dir');
  } finally {
    await archiver.close();
  }
});
