/**
 * The archiver (src/archive/archiver.ts) on a real SQLite file and a real directory, recordings of
 * 8 MiB (more than the socket buffers hold) served by a real local HTTP server, one connection to
 * it (archive.concurrency 1): recordings whose temporary file cannot be created (the file system
 * refuses `open`: EROFS) fail and raise archive_failing, but their connection is given back
 * (the body never read is let go), so once the file system takes writes again the next pass
 * archives them whole.
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { createArchiver, nodeFs, type ArchiveFs } from '../../src/archive/index.js';
import { parseConfig } from '../../src/config/index.js';
import { silentLogger } from '../../src/log.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { callObservation } from '../helpers/calls.js';
import { FakeClock } from '../helpers/fake-clock.js';

const T = Date.parse('2026-05-04T00:00:00Z');
const RECORDING = Buffer.alloc(8 * 1024 * 1024, 5);

let server: Server | undefined;
let store: SqliteStore | undefined;
let dir: string | undefined;
afterEach(async () => {
  store?.close();
  store = undefined;
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** The archive's file system, refusing to create the recordings' temporary files while `readOnly`. */
function readOnlyFs(): ArchiveFs & { readOnly: boolean; refused: number } {
  const fs = {
    ...nodeFs,
    readOnly: true,
    refused: 0,
    async open(path: string, flags: string) {
      if (fs.readOnly && flags === 'wx' && /\.wav\.[0-9a-f]+\.tmp$/.test(path)) {
        fs.refused += 1;
        throw Object.assign(new Error(`EROFS: read-only file system, open '${path}'`), { code: 'EROFS', errno: -30, syscall: 'open', path });
      }
      return nodeFs.open(path, flags);
    },
  };
  return fs;
}

it('recordings whose file cannot be created do not hold their connection: once the disk takes writes again, they are archived', async () => {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-archive-ro-'));
  let requests = 0;
  server = createServer((_req, res) => {
    requests += 1;
    res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': RECORDING.length });
    res.end(RECORDING);
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const clock = new FakeClock(T + 3_600_000);
  store = openStore(join(dir, 'boxwatch.db'), { clock });
  const ids = ['c-1', 'c-2', 'c-3'];
  store.calls.write({
    account: 'default',
    now: clock.now(),
    upserts: ids.map((id, i) => callObservation(id, { startedAt: T + i * 60_000, recording: 'available', detailsRead: true })),
    checked: [],
    sync: { highWater: null, syncedAt: null, resume: null },
    stuckAfterMs: 600_000,
  });
  const archiveDir = join(dir, 'recordings');
  const config = parseConfig(
    `gateway: { base_url: "http://127.0.0.1:9", secret_key: k }\ncalls: {}\narchive: { dir: "${archiveDir}", concurrency: 1 }\nrules:\n  - { name: archive-failing, kind: archive_failing, severity: critical }\n`,
    {},
  );
  const fs = readOnlyFs();
  const archiver = createArchiver({
    config: config.archive!,
    privacy: config.calls!,
    rules: config.rules,
    repo: store.recordings,
    // Every attempt has the URL the call sync just read (`offer`); call details are not read.
    clientOf: () => ({ getCall: () => Promise.reject(new Error('call details are not read in this test')) }),
    clock,
    logger: silentLogger,
    timeoutMs: 5_000,
    fs,
    random: () => 0,
  });
  const offerAll = (): void => archiver.offer(ids.map((id) => ({ callId: id, url: `${base}/${id}.wav?token=t` })));
  try {
    offerAll();
    expect(await archiver.pass()).toMatchObject({ archived: 0, failed: 3 });
    expect(fs.refused).toBe(3); // each one's answer came, and its file could not be created
    const failing = archiver.facts()?.byRule.get('archive-failing');
    expect(failing?.kind === 'archive_failing' && failing.failing?.code).toBe('EROFS');

    fs.readOnly = false;
    clock.advance(60 * 60_000); // past the retry backoff
    offerAll();
    expect(await archiver.pass()).toMatchObject({ archived: 3, failed: 0 });
    const sha = createHash('sha256').update(RECORDING).digest('hex');
    const archived = store.recordings.archivedAll();
    expect(archived.map((a) => a.callId).sort()).toEqual(ids);
    for (const a of archived) {
      expect(a).toMatchObject({ sha256: sha, bytes: RECORDING.length });
      expect(readFileSync(join(archiveDir, a.path)).equals(RECORDING)).toBe(true);
    }
    expect(requests).toBe(6);
  } finally {
    await archiver.close();
  }
}, 60_000);
