/**
 * Which archive directory is which (docs/operations.md, "The recording archive with replicas"):
 * every `archive.dir` carries a marker file, `.boxwatch-archive`, made by the first boxwatch that
 * archives into it, holding a random id (`<host>-<8 hex>`: the host it was made on, for people).
 * Each archived recording's row records the id of the directory its files were written into.
 * Replicas that share one directory (the same path on one host, or a network file system) read the
 * same marker, hence one id; replicas given a local directory each (a misconfiguration) each make
 * their own, so a replica tells the recordings whose files it can see (its own archive's) from
 * those on another disk, which its retention leaves alone and `recordings verify` does not call
 * missing. The marker is created atomically and never replaced: two replicas starting at once on a
 * shared directory end up with the one id. The marker travels with the directory: one made anew
 * (the directory moved without its dotfile) takes back the recordings whose files are in it
 * (archiver.ts).
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { createAtomically, ifExists, type ArchiveFs } from './files.js';
import { isoTime } from '../time-format.js';

/** The marker file's name, in the archive directory. */
export const ARCHIVE_MARKER = '.boxwatch-archive';

const markerSchema = z.object({ id: z.string().regex(/^[A-Za-z0-9._-]{1,80}$/) });

/** A new archive id: the host name (letters, digits, dots and dashes of it) and a random part. */
export function newArchiveId(host = hostname()): string {
  const name = host.replace(/[^A-Za-z0-9.-]/g, '').slice(0, 60) || 'host';
  return `${name}-${randomBytes(4).toString('hex')}`;
}

/**
 * The id of the archive in `dir`, made (with its marker file, created at `now`) when the directory has none yet;
 * `created` when this call made it. The marker is made atomically (files.ts, `createAtomically`):
 * it holds a whole id or does not exist, so a process that finds it (another replica starting at
 * the same moment) reads a complete id, and a write that fails (ENOSPC, a crash) leaves no marker.
 * An empty marker (left by a crash of a boxwatch before 2026-11, which wrote it in place) counts
 * as none and is replaced. Throws the file system's error (ENOSPC, EACCES, ...) when the directory
 * or the marker cannot be written or read, and a plain Error naming the file when the marker is
 * not one boxwatch wrote.
 */
export async function archiveIdentity(fs: ArchiveFs, dir: string, now: number): Promise<{ id: string; created: boolean }> {
  const path = join(dir, ARCHIVE_MARKER);
  const id = newArchiveId();
  const data = Buffer.from(`${JSON.stringify({ id, createdAt: isoTime(now) })}\n`);
  for (let round = 0; round < 5; round += 1) {
    const found = await readMarkerText(path);
    if (found !== null && found !== '') return { id: parseMarker(path, found), created: false };
    if (found === '') await setAside(fs, path);
    if (await createAtomically(fs, path, [data])) return { id, created: true };
    // Another process made it between the read and the link: the next round reads its id.
  }
  throw new Error(`${path} keeps changing: is another program writing it?`);
}

/**
 * Moves an empty marker out of the way (a rename: of two processes doing this at once, one moves
 * it). Should the file moved be a whole marker after all (another process replaced the empty one
 * in between), it is put back.
 */
async function setAside(fs: ArchiveFs, path: string): Promise<void> {
  const aside = `${path}.${randomBytes(6).toString('hex')}.empty`;
  if ((await ifExists(() => fs.rename(path, aside))) === null) return; // gone: another process moved it
  try {
    if ((await readMarkerText(aside)) !== '') await fs.link(aside, path).catch(() => undefined);
  } finally {
    await fs.rm(aside, { force: true });
  }
}

/** The id in the marker file of `dir`, null when it has none (an archive of before archive ids, or not an archive). */
export async function readArchiveId(dir: string): Promise<string | null> {
  const path = join(dir, ARCHIVE_MARKER);
  const text = await readMarkerText(path);
  return text === null || text === '' ? null : parseMarker(path, text);
}

/** The marker file's text, null when there is none. */
async function readMarkerText(path: string): Promise<string | null> {
  return ifExists(() => readFile(path, 'utf8'));
}

function parseMarker(path: string, text: string): string {
  let parsed;
  try {
    parsed = markerSchema.safeParse(JSON.parse(text));
  } catch {
    parsed = undefined;
  }
  if (parsed?.success !== true) throw new Error(`${path} is not a boxwatch archive marker (remove it if nothing else wrote it; boxwatch then makes a new one)`);
  return parsed.data.id;
}
