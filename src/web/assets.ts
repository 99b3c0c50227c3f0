/**
 * The dashboard's static files: plain ES modules and CSS from src/web/static (copied beside the
 * compiled code by `npm run build`), and uPlot served from node_modules (never copied into the
 * tree). Files are read once at start. They are served under `assets/<version>/...`, where the
 * version is a hash of their contents, so that they can be cached for a year (`immutable`) and a
 * new release is fetched at once; a request with another version is still answered, uncached.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Asset {
  body: Buffer;
  type: string;
}

export interface Assets {
  /** Hash of every file: the `<version>` path segment. */
  version: string;
  /** By path below `assets/<version>/`, e.g. `overview.js`, `vendor/uPlot.esm.js`. */
  get(path: string): Asset | undefined;
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

function staticDir(): string {
  return join(dirname(fileURLToPath(import.meta.url)), 'static');
}

function uplotFiles(): Record<string, string> {
  const require = createRequire(import.meta.url);
  const dist = dirname(require.resolve('uplot'));
  return { 'vendor/uPlot.esm.js': join(dist, 'uPlot.esm.js'), 'vendor/uPlot.min.css': join(dist, 'uPlot.min.css') };
}

let loaded: Assets | undefined;

/** Reads the files once (the first call) and keeps them in memory: about 100 KB. */
export function loadAssets(): Assets {
  if (loaded) return loaded;
  const files = new Map<string, Asset>();
  const add = (name: string, file: string): void => {
    const type = TYPES[extname(name)];
    if (type !== undefined) files.set(name, { body: readFileSync(file), type });
  };
  const dir = staticDir();
  for (const name of readdirSync(dir).sort()) add(name, join(dir, name));
  for (const [name, file] of Object.entries(uplotFiles())) add(name, file);
  const hash = createHash('sha256');
  for (const [name, asset] of files) hash.update(name).update(asset.body);
  const version = hash.digest('hex').slice(0, 12);
  loaded = { version, get: (path) => files.get(path) };
  return loaded;
}
