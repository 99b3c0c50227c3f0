/**
 * The archive's identity (src/archive/identity.ts) with the archiver on a real SQLite file and
 * real directories: the marker file made once and read by every later archiver of the directory
 * (two made at once on one directory get the one id); and the recordings archived before archives
 * had ids: those whose files are in the directory become its own when its marker is made (and
 * retention then deletes them when old), those whose files are not there stay unclaimed and are
 * never deleted by its retention.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { createArchiver, nodeFs } from '../../src/archive/index.js';
import { ARCHIVE_MARKER, archiveIdentity, readArchiveId } from '../../src/archive/identity.js';
import { parseConfig } from '../../src/config/index.js';
import { silentLogger } from '../../src/log.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { FakeClock } from '../helpers/fake-clock.js';

const DAY = 86_400_000;
let dir: string | undefined;
let store: SqliteStore | undefined;
afterEach(() => {
  store?.close();
  store = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

it('a directory gets one id, made once: later archivers and two made at once read the same one', async () => {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-archive-id-'));
  const archive = join(dir, 'recordings');
  expect(await readArchiveId(archive)).toBeNull();
  const [first, second] = await Promise.all([archiveIdentity(nodeFs, archive), archiveIdentity(nodeFs, archive)]);
  expect(first.id).toBe(second.id);
  expect([first.created, second.created].sort()).toEqual([false, true]);
  expect(first.id).toMatch(/^[A-Za-z0-9.-]+-[0-9a-f]{8}$/);
  expect(await archiveIdentity(nodeFs, archive)).toEqual({ id: first.id, created: false });
  expect(await readArchiveId(archive)).toBe(first.id);
  expect(JSON.parse(readFileSync(join(archive, ARCHIVE_MARKER), 'utf8'))).toMatchObject({ id: first.id });
  // A file of that name boxwatch did not write is named, not taken for an id.
  writeFileSync(join(archive, ARCHIVE_MARKER), 'hello');
  await expect(archiveIdentity(nodeFs, archive)).rejects.toThrow(/\.boxwatch-archive is not a boxwatch archive marker/);
});

it('recordings archived before archive ids: those whose files are here become this archive’s (and retention deletes them), the others are kept', async () => {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-archive-id-'));
  const archiveDir = join(dir, 'recordings');
  const clock = new FakeClock('2026-05-04T12:00:00Z');
  store = openStore(join(dir, 'boxwatch.db'), { clock });
  const old = clock.now() - 10 * DAY;
  for (const [callId, here] of [
    ['c-1', true],
    ['c-2', false], // its files are on another host's disk
    ['c-3', true],
  ] as const) {
    const path = `2026/04/24/${callId}.wav`;
    const sidecar = `2026/04/24/${callId}.json`;
    if (here) {
      mkdirSync(dirname(join(archiveDir, path)), { recursive: true });
      writeFileSync(join(archiveDir, path), 'audio');
      writeFileSync(join(archiveDir, sidecar), '{}');
    }
    store.recordings.archived({ callId, serial: 'BX-1', path, sha256: 'x', bytes: 5, sidecar, sidecarSha256: 'y', archivedAt: old, archive: null });
  }
  const config = parseConfig(`gateway: { base_url: "http://127.0.0.1:9", secret_key: k }\ncalls: {}\narchive: { dir: "${archiveDir}", retention: 30d }\n`, {});
  const archiver = createArchiver({
    config: config.archive!,
    privacy: config.calls!,
    rules: [],
    repo: store.recordings,
    clientOf: () => undefined,
    clock,
    logger: silentLogger,
    timeoutMs: 1_000,
  });
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
