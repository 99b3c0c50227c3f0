/**
 * Files shipped with boxwatch (migrations/, config/): found beside the package.json above this
 * module, so that they resolve from src/ (tests) and from dist/src/ (the built CLI) alike.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export function packageFile(...parts: string[]): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, ...parts);
    if (existsSync(join(dir, 'package.json')) && existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find ${join(...parts)} of the boxwatch installation`);
    dir = parent;
  }
}
