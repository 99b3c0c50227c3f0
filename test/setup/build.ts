/**
 * Vitest global setup: brings dist/ up to date once, before any test file runs, so that the files
 * that spawn the built `boxwatch` (they call ensureBuilt() too, which is then a no-op) never run
 * tsc at the same time, nor inside a hook's time limit.
 */
import { ensureBuilt } from '../e2e/build.js';

export default async function setup(): Promise<void> {
  await ensureBuilt();
}
