/**
 * What a test of in-process daemons (createApp on a real SQLite file, a simulator over real HTTP)
 * leaves behind, cleaned up after each test: `appTeardown()` registers the vitest afterEach that
 * stops the apps still running, closes the simulator and what else the test handed over, and
 * removes the temporary folders.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import type { App } from '../../src/app.js';
import type { RunningSimulator } from '../../src/sim/server.js';
import type { SqliteStore } from '../../src/store/index.js';

export interface AppTeardown {
  /** Keeps `app` to be stopped after the test; returns it. */
  add(app: App<SqliteStore>): App<SqliteStore>;
  /** Stops `app` now (SIGTERM's way: its leases released) and forgets it. */
  stop(app: App<SqliteStore>): Promise<void>;
  /** The test's simulator, closed after the test. */
  sim: RunningSimulator | undefined;
  /** A new temporary folder, removed after the test. */
  tempDir(prefix: string): string;
  /** Something else to close after the test (after the apps and the simulator); returns it. */
  closeAfter<T extends { close(): unknown }>(thing: T): T;
}

/** Call at the top level of a test file (it registers an afterEach). */
export function appTeardown(): AppTeardown {
  let apps: App<SqliteStore>[] = [];
  const dirs: string[] = [];
  const others: { close(): unknown }[] = [];
  const t: AppTeardown = {
    add: (app) => {
      apps.push(app);
      return app;
    },
    stop: async (app) => {
      apps = apps.filter((x) => x !== app);
      await app.stop();
    },
    sim: undefined,
    tempDir: (prefix) => {
      const dir = mkdtempSync(join(tmpdir(), prefix));
      dirs.push(dir);
      return dir;
    },
    closeAfter: (thing) => {
      others.push(thing);
      return thing;
    },
  };
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.stop();
    await t.sim?.close();
    t.sim = undefined;
    for (const thing of others.splice(0)) await thing.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  return t;
}
