/**
 * Makes sure dist/ (the build the `boxwatch` executable runs) is not older than src/, for tests
 * that spawn the real process. Builds with tsc only when a source file is newer than the build.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const MAIN = join(ROOT, 'dist/src/main.js');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestMtime(path));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/** True when dist/src/main.js is missing or some src/**.ts file is newer than it. */
export function buildIsStale(): boolean {
  if (!existsSync(MAIN)) return true;
  return newestMtime(join(ROOT, 'src')) > statSync(MAIN).mtimeMs;
}

/**
 * Runs `tsc -p tsconfig.build.json` when the build is stale. tsc emits even when it reports type
 * errors (work in progress elsewhere in the tree); only a build that did not produce a fresh
 * main.js is an error.
 */
export async function ensureBuilt(): Promise<void> {
  if (!buildIsStale()) return;
  const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
  const started = Date.now();
  try {
    await promisify(execFile)(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    if (!existsSync(MAIN) || statSync(MAIN).mtimeMs < started - 1000) {
      throw new Error(`build failed: ${(err as { stdout?: string }).stdout ?? String(err)}`, { cause: err });
    }
  }
}
