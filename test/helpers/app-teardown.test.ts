/**
 * The teardown of in-process daemons (test/helpers/app-teardown.ts) goes on when one step fails:
 * an `app.stop()` that throws still lets the other apps stop, the simulator close (its port
 * freed), what else was handed over close and the temporary folders go; the first error is
 * thrown at the end, so the test that left it fails. Before, the first throw skipped the rest.
 */
import { existsSync } from 'node:fs';
import { expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { SqliteStore } from '../../src/store/index.js';
import { startSimulator } from '../../src/sim/server.js';
import { createTeardown } from './app-teardown.js';
import { FakeClock } from './fake-clock.js';

/** An app as the teardown sees it: its stop() counted, throwing `error` when given one. */
function appStopping(stopped: string[], name: string, error?: Error): App<SqliteStore> {
  return {
    stop: async () => {
      stopped.push(name);
      if (error !== undefined) throw error;
    },
  } as unknown as App<SqliteStore>;
}

it('an app whose stop() throws: the other apps stop, the simulator and the rest close, the folders go, and the first error is thrown', async () => {
  const t = createTeardown();
  const stopped: string[] = [];
  const first = new Error('replica-a could not stop');
  t.add(appStopping(stopped, 'a', first));
  t.add(appStopping(stopped, 'b', new Error('replica-b could not stop either')));
  t.add(appStopping(stopped, 'c'));
  const sim = (t.sim = await startSimulator({ port: 0, key: 'teardown-key', devices: 1, seed: 1, clock: new FakeClock(Date.now()) }));
  const closed: string[] = [];
  t.closeAfter({ close: () => closed.push('receiver') });
  const dir = t.tempDir('boxwatch-teardown-');

  await expect(t.cleanup()).rejects.toBe(first);
  expect(stopped).toEqual(['a', 'b', 'c']);
  await expect(fetch(`${sim.url}/`)).rejects.toThrow(); // the simulator's port is closed
  expect(closed).toEqual(['receiver']);
  expect(existsSync(dir)).toBe(false);
  expect(t.sim).toBeUndefined();
  // Nothing is left for a second cleanup.
  await expect(t.cleanup()).resolves.toBeUndefined();
  expect(stopped).toHaveLength(3);
});
