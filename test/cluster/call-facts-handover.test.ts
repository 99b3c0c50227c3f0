/**
 * A replica that gets an account back does not judge its call rules with what it knew before
 * (src/app.ts: the call facts are forgotten when the account's lease is taken or lost). Two
 * replicas (createApp with `cluster:`, their coordinators running on fake clocks) share a real
 * SQLite file and read one simulator over real HTTP; every call fails for the first three minutes,
 * then every call succeeds.
 *
 * replica-a leads and its call rule fires for both boxes. It then freezes (its own clock stops:
 * no round, no cycle), replica-b takes the account over, sees the calls succeed and resolves both
 * alerts. replica-a wakes and steps down; replica-b stops (SIGTERM: its lease released), so
 * replica-a gets the account back, and its first cycle,
 * before any call sync of its own, must not fire again from its minutes-old facts (it did: false
 * FIRING pages). Its next call sync judges from the calls as they are: nothing fires.
 */
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { parseConfig } from '../../src/config/index.js';
import { silentLogger } from '../../src/log.js';
import { parseScenario } from '../../src/sim/scenario.js';
import { startSimulator } from '../../src/sim/server.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { appTeardown } from '../helpers/app-teardown.js';

const T = Date.parse('2026-05-01T09:00:00Z');
const KEY = 'handover-key';

const teardown = appTeardown();

const flush = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

it('a replica that gets an account back fires no call alert from its facts of before the handover', async () => {
  const world = new FakeClock(T); // the simulator's, and replica-b's
  const sim = (teardown.sim = await startSimulator({
    port: 0,
    key: KEY,
    devices: 2,
    seed: 3,
    clock: world,
    historyCalls: 0,
    scenario: parseScenario(
      `calls: { per_box_per_hour: 600 }
timeline:
  - { at: 0s, box: "BX-*", connect: true }
  - { at: 0s, calls_fail: { box: "BX-*", rate: 1, for: 3m } }
`,
      'handover',
    ),
  }));
  const dbPath = join(teardown.tempDir('boxwatch-handover-'), 'boxwatch.db');
  const replica = (name: string, clock: FakeClock): App<SqliteStore> => {
    const config = parseConfig(
      `
gateway: { base_url: "${sim.url}", secret_key: "\${KEY}" }
poll: { schedule: "0 0 1 1 *" }
storage: { path: "${dbPath}" }
cluster: { lease: 3s, replica_id: ${name} }
calls: { schedule: "0 0 1 1 *" }
rules:
  - { name: call-failures, kind: call_failure_rate, window: 10, min_calls: 3, above: 50, clear_below: 35, severity: warning }
alerting: { group_wait: 0s }
notifiers: []
http: false
`,
      { KEY },
      name,
    );
    return teardown.add(createApp({ config, logger: silentLogger, clock, store: openStore(dbPath, { clock }) }));
  };
  const aClock = new FakeClock(T); // replica-a's: stopped while it is frozen
  const a = replica('replica-a', aClock);
  const b = replica('replica-b', world);
  const holder = (): string | null | undefined => a.store.leases.leases().find((l) => l.account === 'default')?.holder;
  /** `ms` of time in 1 s steps on `clocks`, each followed by the rounds it woke. */
  const run = async (ms: number, clocks: FakeClock[]): Promise<void> => {
    for (let t = 0; t < ms; t += 1_000) {
      for (const c of clocks) c.advance(1_000);
      await flush();
    }
  };
  /** One simulated minute (both replicas' time when `awake`), then the leader's call sync and cycle. */
  const minute = async (leader: App<SqliteStore>, clocks: FakeClock[], sync = true): Promise<void> => {
    await run(60_000, clocks);
    if (sync) await leader.runCallsOnce();
    await leader.runOnce();
  };
  const firing = async (): Promise<string[]> => [...(await a.alerts.states()).values()].filter((s) => s.status === 'firing').map((s) => s.serial).sort();
  const firedAfter = async (since: number): Promise<string[]> => (await a.alerts.transitionsSince(since)).filter((t) => t.to === 'firing').map((t) => t.serial);

  // replica-a leads; every call fails: its call rule fires for both boxes.
  await a.start();
  await run(2_000, [aClock, world]);
  expect(holder()).toBe('replica-a');
  for (let i = 0; i < 2; i++) await minute(a, [aClock, world]);
  expect(await firing()).toEqual(['BX-00001', 'BX-00002']);

  // replica-a freezes; replica-b takes the account over once its lease expired, and sees the calls succeed again.
  await b.start();
  await run(10_000, [world]);
  expect(holder()).toBe('replica-b');
  for (let i = 0; i < 4; i++) await minute(b, [world]);
  expect(await firing()).toEqual([]);

  // replica-a wakes: it stops the account it had; replica-b keeps it (balanced: one account, two
  // replicas) until it stops (SIGTERM: its lease released); replica-a then gets it back.
  const woke = world.now();
  aClock.set(world.now());
  await run(8_000, [aClock, world]);
  expect(holder()).toBe('replica-b');
  await teardown.stop(b);
  await run(2_000, [aClock, world]);
  expect(holder()).toBe('replica-a');
  // Its first cycle, before any call sync of its own: the call rule says unknown (nothing fires).
  await minute(a, [aClock, world], false);
  expect(await firedAfter(woke)).toEqual([]);
  // Its next call sync judges the calls as they are: still nothing fires.
  await minute(a, [aClock, world]);
  expect(await firedAfter(woke)).toEqual([]);
  expect(await firing()).toEqual([]);
}, 60_000);
