/**
 * Which archive directory is which (docs/operations.md, "The recording archive with replicas"):
 * every `archive.dir` carries a marker file, `.boxwatch-archive`, made by the first boxwatch that
 * archives into it, holding a random id (`<host>-<8 hex>`: the host it was made on, for people).
 * Each archived recording's row records the id of the directory its files were written into.
 * Replicas that share one directory (the same path on one host, or a network file system) read the
 * same marker, hence one id; replicas given a local directory each (a misconfiguration) each make
 * their own, so a replica tells the recordings whose files it can see (its own archive's) from
 * those on another disk, which its retention leaves alone and `recordings verify` does not call
 * missing. The marker is created with O_EXCL: two replicas starting at once on a shared directory
 * end up with the one id.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { ArchiveFs } from './files.js';

/** The marker file's name, in the archive directory. */
export const ARCHIVE_MARKER = '.boxwatch-archive';

const markerSchema = z.object({ id: z.string().regex(/^[A-Za-z0-9._-]{1,80}$/) });

/** A new archive id: the host name (letters, digits, dots and dashes of it) and a random part. */
export function newArchiveId(host = hostname()): string {
  const name = host.replace(/[^A-Za-z0-9.-]/g, '').slice(0, 60) || 'host';
  return `${name}-${randomBytes(4).toString('hex')}`;
}

/**
 * The id of the archive in `dir`, made (with its marker file) when the directory has none yet;
 * `created` when this call made it. Throws the file system's error (ENOSPC, EACCES, ...) when the
 * directory or the marker cannot be written, and a plain Error naming the file when the marker is
 * not one boxwatch wrote.
 */
export async function archiveIdentity(fs: ArchiveFs, dir: string): Promise<{ id: string; created: boolean }> {
  const path = join(dir, ARCHIVE_MARKER);
  const id = newArchiveId();
  const create = () => fs.open(path, 'wx');
  let file;
  try {
    file = await create().catch(async (err: unknown) => {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      await fs.mkdir(dir, { recursive: true }); // no directory yet (a file in its place fails the open: ENOTDIR)
      return create();
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return { id: await readMarker(path), created: false };
  }
  try {
    const data = Buffer.from(`${JSON.stringify({ id, createdAt: new Date().toISOString() })}\n`);
    await file.write(data, 0, data.length);
    await file.sync();
  } finally {
    await file.close();
  }
  return { id, created: true };
}

/** The id in the marker file of `dir`, null when it has none (an archive of before archive ids, or not an archive). */
export async function readArchiveId(dir: string): Promise<string | null> {
  try {
    return await readMarker(join(dir, ARCHIVE_MARKER));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

async function readMarker(path: string): Promise<string> {
  const text = await readFile(path, 'utf8');
  let parsed;
  try {
    parsed = markerSchema.safeParse(JSON.parse(text));
  } catch {
    parsed = undefined;
  }
  if (parsed?.success !== true) throw new Error(`${path} is not a boxwatch archive marker (remove it if nothing else wrote it; boxwatch then makes a new one)`);
  return parsed.data.id;
}
