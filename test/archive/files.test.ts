/**
 * "A missing file is no error" in the archive (src/archive/files.ts, `ifExists`), on real files:
 * a file that does not exist gives null (the checksum, the marker, the recording's presence), a
 * file standing where a directory should be counts as missing only where the caller says so, and
 * every other error (reading a directory) is thrown, not taken for a missing file.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { fileSha256, holdsRecording, ifExists } from '../../src/archive/files.js';
import { readArchiveId } from '../../src/archive/identity.js';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function tempDir(): string {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-archive-files-'));
  return dir;
}

it('ifExists: the result when the file is there, null when it is not, any other error thrown', async () => {
  const root = tempDir();
  writeFileSync(join(root, 'a.txt'), 'hello');
  writeFileSync(join(root, 'plain'), 'a file, not a directory');
  expect(await ifExists(() => readFile(join(root, 'a.txt'), 'utf8'))).toBe('hello');
  expect(await ifExists(() => readFile(join(root, 'none.txt'), 'utf8'))).toBeNull();
  expect(await ifExists(() => readFile(join(root, 'no-dir', 'none.txt'), 'utf8'))).toBeNull();
  // A file where a directory should be: missing only when the caller says so.
  await expect(ifExists(() => readFile(join(root, 'plain', 'x'), 'utf8'))).rejects.toMatchObject({ code: 'ENOTDIR' });
  expect(await ifExists(() => readFile(join(root, 'plain', 'x'), 'utf8'), ['ENOTDIR'])).toBeNull();
  // Reading a directory is an error, not a missing file.
  await expect(ifExists(() => readFile(root, 'utf8'))).rejects.toMatchObject({ code: 'EISDIR' });
});

it('the archive’s readers: a checksum, the marker and a recording’s presence are null or false for a missing file, an error for a directory', async () => {
  const root = tempDir();
  const audio = Buffer.from('audio');
  mkdirSync(join(root, '2026/04/24'), { recursive: true });
  writeFileSync(join(root, '2026/04/24/c-1.wav'), audio);
  const sha = createHash('sha256').update(audio).digest('hex');
  expect(await fileSha256(join(root, '2026/04/24/c-1.wav'))).toBe(sha);
  expect(await fileSha256(join(root, '2026/04/24/c-2.wav'))).toBeNull();
  await expect(fileSha256(join(root, '2026'))).rejects.toMatchObject({ code: 'EISDIR' });
  expect(await readArchiveId(join(root, 'not-made-yet'))).toBeNull();
  expect(await holdsRecording(root, { path: '2026/04/24/c-1.wav', sha256: sha, bytes: audio.length })).toBe(true);
  expect(await holdsRecording(root, { path: '2026/04/24/c-2.wav', sha256: sha, bytes: audio.length })).toBe(false);
  expect(await holdsRecording(root, { path: '2026/04/24/c-1.wav/x.wav', sha256: sha, bytes: audio.length })).toBe(false); // ENOTDIR
  expect(await holdsRecording(root, { path: '2026/04/24/c-1.wav', sha256: sha, bytes: audio.length + 1 })).toBe(false);
});
