/**
 * Two `boxwatch run` processes given one `cluster.replica_id` by mistake (src/cluster/coordinator.ts):
 * both would work the same leases under one holder id, so each tells so. Its heartbeat says who
 * beat under the id last (leases.ts, the random `instance` token of each process's life); another
 * instance since its own last heartbeat is a process running now.
 * - The coordinator on the in-memory lease store, rounds run by hand: a restarted replica (its
 *   earlier life killed, its row left behind) is not taken for a second process; two running ones
 *   are, logged once at error with the fix, until the other one has not been seen for a lease time
 *   (a round where the two processes' rounds crossed in phase does not end it).
 * - The daemon: two apps on one real SQLite file, the same replica_id, their coordinators on one
 *   fake clock: `boxwatch_replica_id_conflict` is 1 on both, each logs the fix once, and the built
 *   `boxwatch status` says it in one line; the other stopped, it is 0 again and the line is gone.
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { Coordinator } from '../../src/cluster/coordinator.js';
import type { ReplicaInfo } from '../../src/domain/leases.js';
import { parseConfig } from '../../src/config/index.js';
import { createLogger, type Logger } from '../../src/log.js';
import { startSimulator } from '../../src/sim/server.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { MemoryLeases } from './memory-leases.js';
import { ensureBuilt } from '../e2e/build.js';
import { runBuilt } from '../helpers/cli-process.js';
import { appTeardown } from '../helpers/app-teardown.js';

const FIX = 'give each replica its own replica_id';
const teardown = appTeardown();
beforeAll(ensureBuilt, 120_000);

/** A logger whose JSON lines land in `lines`. */
function capture(lines: string[]): Logger {
  return createLogger({
    destination: new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    }),
  });
}

/** Coordinators of replica-a (30 s leases, one account) on one in-memory lease store and one fake clock, logging into `lines`. */
function coordinators(): { clock: FakeClock; lines: string[]; coordinator: (replica: ReplicaInfo) => Coordinator } {
  const clock = new FakeClock('2026-05-01T09:00:00Z');
  const store = new MemoryLeases();
  const work = { start: () => undefined, stop: async () => undefined };
  const lines: string[] = [];
  const coordinator = (replica: ReplicaInfo): Coordinator => new Coordinator({ repo: store.link(), replica, accounts: () => ['acme'], work, clock, leaseMs: 30_000, logger: capture(lines) });
  return { clock, lines, coordinator };
}

it('the coordinator: a restarted replica is not a second process; two running under one id are, until one stops', async () => {
  const { clock, lines, coordinator } = coordinators();
  const said = (): number => lines.filter((l) => l.includes(FIX)).length;

  // An earlier life of replica-a beat, then was killed (its row stays); the restarted one beats on.
  const earlier = coordinator({ id: 'replica-a', host: 'vm1', pid: 100, instance: 'life-1' });
  await earlier.tick();
  const restarted = coordinator({ id: 'replica-a', host: 'vm1', pid: 200, instance: 'life-2' });
  for (let i = 0; i < 3; i++) {
    clock.advance(10_000);
    await restarted.tick();
  }
  expect(restarted.sharedWith()).toBeNull();
  expect(said()).toBe(0);

  // A second process given the same replica_id starts on another host: both tell within a round.
  const second = coordinator({ id: 'replica-a', host: 'vm2', pid: 300, instance: 'other' });
  for (let i = 0; i < 3; i++) {
    clock.advance(5_000);
    await second.tick();
    clock.advance(5_000);
    await restarted.tick();
  }
  expect(restarted.sharedWith()).toEqual({ host: 'vm2', pid: 300, instance: 'other' });
  expect(second.sharedWith()).toEqual({ host: 'vm1', pid: 200, instance: 'life-2' });
  expect(said()).toBe(2); // once each, not every round

  // The second one stops (it leaves): the first finds nobody else at its next rounds, and says the
  // conflict is over once the other has not been seen for a lease time (30 s).
  await second.stop();
  clock.advance(10_000);
  await restarted.tick();
  clock.advance(10_000);
  await restarted.tick();
  expect(restarted.sharedWith()).toEqual({ host: 'vm2', pid: 300, instance: 'other' }); // 20 s: not yet
  clock.advance(10_000);
  await restarted.tick();
  expect(restarted.sharedWith()).toBeNull();
  expect(lines.filter((l) => l.includes('no other process runs with this replica_id any more'))).toHaveLength(1);
  await restarted.stop();
});

it('the coordinator: when the two processes\' rounds cross in phase the conflict stays (one error each, no "any more"); it ends a lease time after the other stopped', async () => {
  const { clock, lines, coordinator } = coordinators();
  const a = coordinator({ id: 'replica-a', host: 'vm1', pid: 1, instance: 'A' });
  const b = coordinator({ id: 'replica-a', host: 'vm2', pid: 2, instance: 'B' });
  const gone = (): number => lines.filter((l) => l.includes('no other process runs with this replica_id any more')).length;
  // a beats every 10 s; b's phase drifts past a's: b at 9.999 s then 20.001 s, so a beats at 10 s
  // and 20 s with no beat of b in between (at 20 s a finds its own heartbeat).
  const beats = [0, 10_000, 20_000, 30_000, 40_000].map((at) => ({ at, who: a }));
  for (const at of [9_999, 20_001, 30_001, 40_001]) beats.push({ at, who: b });
  beats.sort((x, y) => x.at - y.at);
  const seenByA: (string | null)[] = [];
  let t = 0;
  for (const beat of beats) {
    clock.advance(beat.at - t);
    t = beat.at;
    await beat.who.tick();
    if (beat.who === a) seenByA.push(a.sharedWith()?.instance ?? null); // what the gauge shows
  }
  expect(seenByA).toEqual([null, 'B', 'B', 'B', 'B']);
  expect(b.sharedWith()?.instance).toBe('A');
  expect(lines.filter((l) => l.includes(FIX))).toHaveLength(2); // once per process
  expect(gone()).toBe(0);

  // b stops after its beat at 40.001 s; a last saw it at 40 s: still shown at 50 s and 60 s, over at 70 s.
  await b.stop();
  const after: (string | null)[] = [];
  for (const at of [50_000, 60_000, 70_000, 80_000]) {
    clock.advance(at - t);
    t = at;
    await a.tick();
    after.push(a.sharedWith()?.instance ?? null);
  }
  expect(after).toEqual(['B', 'B', null, null]);
  expect(gone()).toBe(1);
  expect(lines.filter((l) => l.includes(FIX))).toHaveLength(2);
  await a.stop();
});

it('the daemon: two processes on one SQLite file with one replica_id each raise boxwatch_replica_id_conflict, log the fix, and `boxwatch status` says so; one stopped, it clears', async () => {
  // The wall clock's time: the built `boxwatch status` reads the heartbeats at its own now.
  const clock = new FakeClock(Date.now());
  const sim = (teardown.sim = await startSimulator({ port: 0, key: 'k', devices: 2, seed: 3, clock }));
  const dbPath = join(teardown.tempDir('boxwatch-replica-id-'), 'boxwatch.db');
  const logs: string[][] = [];
  const daemon = (): App<SqliteStore> => {
    const lines: string[] = [];
    logs.push(lines);
    const config = parseConfig(
      `
gateways:
  - { name: acme, base_url: "${sim.url}", secret_key: k, schedule: "0 0 1 1 *" }
storage: { path: "${dbPath}" }
cluster: { lease: 3s, replica_id: replica-a }
notifiers: []
http: false
`,
      {},
    );
    return teardown.add(createApp({ config, logger: capture(lines), clock, store: openStore(dbPath, { clock }) }));
  };
  const run = async (ms: number): Promise<void> => {
    for (let t = 0; t < ms; t += 500) {
      clock.advance(500);
      for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
    }
  };
  const conflict = async (app: App): Promise<number> => (await app.metrics.registry.getSingleMetric('boxwatch_replica_id_conflict')?.get())?.values[0]?.value ?? Number.NaN;

  const a = daemon();
  await a.start();
  await run(5_000);
  expect(await conflict(a)).toBe(0);
  const b = daemon();
  await b.start();
  await run(5_000);
  expect(await conflict(a)).toBe(1);
  expect(await conflict(b)).toBe(1);
  for (const lines of logs) expect(lines.filter((l) => l.includes(FIX))).toHaveLength(1);
  for (const app of [a, b]) await app.runOnce(); // boxes for the JSON (whichever leads acme polls it)
  // The two apps are one process here: both halves name its host and pid.
  const me = `host ${hostname()}, pid ${process.pid}`;
  const status = await runBuilt(['status', '--db', dbPath]);
  expect(status.code, status.err).toBe(0);
  const said = status.out.split('\n').filter((l) => l.includes('replica_id'));
  expect(said).toHaveLength(1);
  expect(said[0]).toMatch(/^replica_id conflict: two boxwatch processes run as replica replica-a \((.+); heartbeat [^)]+\), both working the same accounts: give each replica its own cluster.replica_id \(or none\), and restart them$/);
  expect(said[0]).toContain(`(${me}; ${me}; heartbeat `);
  // The JSON: each box's server says so too.
  const json = await runBuilt(['status', '--db', dbPath, '--format', 'json']);
  expect(json.code, json.err).toBe(0);
  const served = (JSON.parse(json.out) as { servedBy: { replica: string; sharedWith: unknown } }[]).map((b) => b.servedBy);
  expect(served).toEqual([
    expect.objectContaining({ replica: 'replica-a', sharedWith: { host: hostname(), pid: process.pid } }),
    expect.objectContaining({ replica: 'replica-a', sharedWith: { host: hostname(), pid: process.pid } }),
  ]);

  await teardown.stop(b);
  await run(5_000);
  expect(await conflict(a)).toBe(0);
  const after = await runBuilt(['status', '--db', dbPath]);
  expect(after.code, after.err).toBe(0);
  expect(after.out).not.toContain('replica_id');
  expect(after.out).toMatch(/^ {2}acme: replica-a \(host /m); // still served, by the one left
  const jsonAfter = await runBuilt(['status', '--db', dbPath, '--format', 'json']);
  expect((JSON.parse(jsonAfter.out) as { servedBy: { sharedWith: unknown } }[]).map((b) => b.servedBy.sharedWith)).toEqual([null, null]);
});
