/**
 * What a test of in-process daemons (createApp on a real SQLite file or PostgreSQL database, a
 * simulator over real HTTP) leaves behind, cleaned up after each test: `appTeardown()` registers
 * the vitest afterEach that stops the apps still running, closes the simulator and what else the
 * test handed over, and removes the temporary folders. Each step runs even when an earlier one
 * throws (an `app.stop()` that fails must not leave the other apps running, their ports and files
 * held, for the next test); the first error is thrown at the end, so the test still fails.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import type { App } from '../../src/app.js';
import type { RunningSimulator } from '../../src/sim/server.js';
import type { DataStore, SqliteStore } from '../../src/store/index.js';

export interface AppTeardown<S extends DataStore = SqliteStore> {
  /** Keeps `app` to be stopped after the test; returns it. */
  add(app: App<S>): App<S>;
  /** Stops `app` now (SIGTERM's way: its leases released) and forgets it. */
  stop(app: App<S>): Promise<void>;
  /** The test's simulator, closed after the test. */
  sim: RunningSimulator | undefined;
  /** A new temporary folder, removed after the test. */
  tempDir(prefix: string): string;
  /** Something else to close after the test (after the apps and the simulator); returns it. */
  closeAfter<T extends { close(): unknown }>(thing: T): T;
  /**
   * Stops the apps, closes the simulator and the rest, removes the folders, each step even when an
   * earlier one threw; rejects with the first error. appTeardown's afterEach calls it.
   */
  cleanup(): Promise<void>;
}

/** A teardown whose `cleanup()` the caller runs (appTeardown runs it after each test). */
export function createTeardown<S extends DataStore = SqliteStore>(): AppTeardown<S> {
  let apps: App<S>[] = [];
  const dirs: string[] = [];
  const others: { close(): unknown }[] = [];
  const t: AppTeardown<S> = {
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
    async cleanup() {
      const sim = t.sim;
      t.sim = undefined;
      const steps: (() => unknown)[] = [
        ...apps.splice(0).map((app) => () => app.stop()),
        ...(sim === undefined ? [] : [() => sim.close()]),
        ...others.splice(0).map((thing) => () => thing.close()),
        ...dirs.splice(0).map((dir) => () => rmSync(dir, { recursive: true, force: true })),
      ];
      const errors: unknown[] = [];
      for (const step of steps) {
        try {
          await step();
        } catch (err) {
          errors.push(err);
        }
      }
      if (errors.length > 0) throw errors[0];
    },
  };
  return t;
}

/** Call at the top level of a test file, or of a describe block (it registers an afterEach there). */
export function appTeardown<S extends DataStore = SqliteStore>(): AppTeardown<S> {
  const t = createTeardown<S>();
  afterEach(() => t.cleanup());
  return t;
}
