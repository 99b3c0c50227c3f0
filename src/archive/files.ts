/**
 * The archive's files: where a recording and its sidecar go (`DIR/YYYY/MM/DD/<call_id>.<ext>` and
 * `<call_id>.json`, the day of the call's start in UTC; a call of an account other than
 * `default` under `DIR/<account>/YYYY/...`, so that two accounts' calls never share a file), how they are written (a temporary file in
 * the same directory, fsync, rename, fsync of the directory: a file under its final name is always
 * whole), and how they are checked against their SHA-256 (`boxwatch recordings verify`).
 *
 * File-system calls go through `ArchiveFs`, the boundary tests replace to make the disk fill up.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { DEFAULT_ACCOUNT, splitBoxKey } from '../box-id.js';

/** An open file, as the archive writes it (node's FileHandle fits). */
export interface ArchiveFile {
  write(data: Uint8Array, offset: number, length: number): Promise<{ bytesWritten: number }>;
  sync(): Promise<void>;
  close(): Promise<void>;
}

/** The file-system calls the archive makes. */
export interface ArchiveFs {
  mkdir(path: string, options: { recursive: true }): Promise<unknown>;
  open(path: string, flags: string): Promise<ArchiveFile>;
  rename(from: string, to: string): Promise<void>;
  /** A second name for a file; fails with EEXIST when `to` exists (never replaces it). */
  link(from: string, to: string): Promise<void>;
  rm(path: string, options: { force: true }): Promise<void>;
  /** Removes an empty directory (fails on a non-empty one). */
  rmdir(path: string): Promise<void>;
}

export const nodeFs: ArchiveFs = {
  mkdir: (path, options) => fsp.mkdir(path, options),
  open: (path, flags) => fsp.open(path, flags),
  rename: (from, to) => fsp.rename(from, to),
  link: (from, to) => fsp.link(from, to),
  rm: (path, options) => fsp.rm(path, options),
  rmdir: (path) => fsp.rmdir(path),
};

const SAFE_ID = /^[A-Za-z0-9_-]{1,100}$/;

/**
 * The archive paths of a call's recording and sidecar (`callKey`: the call as stored,
 * src/box-id.ts), relative to the archive directory. A call id that is not a plain name (the
 * vendor's are integers) is replaced by a hash of it, so that no id can name a path outside the
 * archive; account names are plain names (config/schema.ts).
 */
export function archivePaths(callKey: string, startedAt: number, ext: string): { recording: string; sidecar: string } {
  const { account, serial: callId } = splitBoxKey(callKey);
  const d = new Date(startedAt);
  const day = `${account === DEFAULT_ACCOUNT ? '' : `${account}/`}${d.getUTCFullYear()}/${String(d.getUTCMonth() + 1).padStart(2, '0')}/${String(d.getUTCDate()).padStart(2, '0')}`;
  const name = SAFE_ID.test(callId) ? callId : `id-${createHash('sha256').update(callId).digest('hex').slice(0, 32)}`;
  return { recording: `${day}/${name}.${ext}`, sidecar: `${day}/${name}.json` };
}

const EXT_BY_TYPE: Readonly<Record<string, string>> = {
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/wave': 'wav',
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/ogg': 'ogg',
  'audio/mp4': 'm4a',
  'audio/webm': 'webm',
  'audio/flac': 'flac',
};

/** The file extension of a recording: from its URL's path (`.wav`), else its content type, else `bin`. */
export function recordingExtension(url: URL, contentType: string | undefined): string {
  const fromPath = /\.([A-Za-z0-9]{1,5})$/.exec(url.pathname)?.[1];
  if (fromPath !== undefined) return fromPath.toLowerCase();
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  return (type !== undefined && EXT_BY_TYPE[type]) || 'bin';
}

/**
 * Writes `chunks` to `path` atomically and returns its SHA-256 (hex) and size. On any failure
 * (ENOSPC among them) the temporary file is removed and nothing exists under `path` that was not
 * there before; the error is rethrown.
 */
export async function writeAtomically(fs: ArchiveFs, path: string, chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<{ sha256: string; bytes: number }> {
  const { temp, ...written } = await writeTemporary(fs, path, chunks);
  try {
    await fs.rename(temp, path);
  } catch (err) {
    await fs.rm(temp, { force: true }).catch(() => undefined);
    throw err;
  }
  await syncDir(fs, dirname(path));
  return written;
}

/**
 * Creates `path` atomically with `chunks` unless it exists: the whole file appears under `path` or
 * nothing does (a hard link of a complete, fsynced temporary file, which never replaces a file).
 * False when `path` exists already (another process made it first); the file system's error on
 * any other failure, with the temporary file removed.
 */
export async function createAtomically(fs: ArchiveFs, path: string, chunks: Iterable<Uint8Array>): Promise<boolean> {
  const { temp } = await writeTemporary(fs, path, chunks);
  try {
    await fs.link(temp, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    await fs.rm(temp, { force: true }).catch(() => undefined);
  }
  await syncDir(fs, dirname(path));
  return true;
}

/** `chunks` written and fsynced to a new temporary file beside `path` (its directory made), removed again on any failure. */
async function writeTemporary(fs: ArchiveFs, path: string, chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<{ temp: string; sha256: string; bytes: number }> {
  const dir = dirname(path);
  await fs.mkdir(dir, { recursive: true });
  const temp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const hash = createHash('sha256');
  let bytes = 0;
  const file = await fs.open(temp, 'wx');
  try {
    try {
      for await (const chunk of chunks) {
        hash.update(chunk);
        for (let off = 0; off < chunk.length; ) {
          const { bytesWritten } = await file.write(chunk, off, chunk.length - off);
          off += bytesWritten;
        }
        bytes += chunk.length;
      }
      await file.sync();
    } finally {
      await file.close();
    }
  } catch (err) {
    await fs.rm(temp, { force: true }).catch(() => undefined);
    throw err;
  }
  return { temp, sha256: hash.digest('hex'), bytes };
}

/** Makes a rename durable: fsync of the directory (where the platform allows it). */
async function syncDir(fs: ArchiveFs, dir: string): Promise<void> {
  let handle: ArchiveFile | undefined;
  try {
    handle = await fs.open(dir, 'r');
    await handle.sync();
  } catch {
    // Some file systems refuse fsync on a directory; the rename itself has happened.
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/** Deletes a file and then its day, month and year directories while they are empty. */
export async function removeWithEmptyParents(fs: ArchiveFs, root: string, relative: string): Promise<void> {
  await fs.rm(join(root, relative), { force: true });
  let dir = dirname(relative);
  while (dir !== '.' && dir !== '/' && dir !== '') {
    try {
      await fs.rmdir(join(root, dir));
    } catch {
      return; // not empty (or already gone)
    }
    dir = dirname(dir);
  }
}

/** The SHA-256 (hex) of a file, read as a stream; null when it does not exist. */
export async function fileSha256(path: string): Promise<string | null> {
  return ifExists(async () => {
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
    return hash.digest('hex');
  });
}

/**
 * Whether `dir` holds the recording: its file is there with the size and SHA-256 recorded when it
 * was written (read-only). The one test of "this recording's files are in this directory": the
 * archiver claims such recordings for its archive when it makes a new marker, and `recordings
 * verify` checks them here whatever archive id their row carries (identity.ts).
 */
export async function holdsRecording(dir: string, r: { path: string; sha256: string; bytes: number }): Promise<boolean> {
  const path = join(dir, r.path);
  // ENOTDIR: a file stands where one of the recording's directories should be.
  const stat = await ifExists(() => fsp.stat(path), ['ENOTDIR']);
  return stat !== null && stat.size === r.bytes && (await fileSha256(path)) === r.sha256;
}

/**
 * What `op` gives, or null when the file it works on does not exist (ENOENT, and the codes of
 * `alsoMissing`); any other error is thrown. The archive's one "a missing file is no error".
 */
export async function ifExists<T>(op: () => Promise<T>, alsoMissing: readonly string[] = []): Promise<T | null> {
  try {
    return await op();
  } catch (err) {
    const code = fsErrorCode(err);
    if (code === 'ENOENT' || (code !== undefined && alsoMissing.includes(code))) return null;
    throw err;
  }
}

/** A file-system error code such as ENOSPC, or undefined for other errors. */
export function fsErrorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^E[A-Z]+$/.test(code) ? code : undefined;
}

/** The codes that say the archive's storage cannot take files (the `archive_failing` rule). */
export const STORAGE_ERRORS: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EACCES', 'EPERM', 'EIO', 'EFBIG', 'ENOTDIR']);
