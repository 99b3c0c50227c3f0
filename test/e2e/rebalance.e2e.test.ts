/**
 * No needless lease moves, with real processes: three `boxwatch run` replicas (`cluster:`, a 10 s
 * lease) of two accounts on one SQLite file. replica-a and replica-b lead one account each;
 * replica-c, started last, leads none (balanced: 1, 1, 0). replica-a, the lowest id, is restarted
 * (SIGTERM, then started again under its replica_id): replica-c takes the account it released,
 * and when replica-a is back no lease moves: the others are balanced, so it stands by (before,
 * the lowest id got its quota back: a second takeover for nothing).
 *
 * "No move" is read from the fencing tokens after several rounds of every replica (each round
 * plans the balance), counted from the replicas' heartbeats, not from elapsed time.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sqliteRows, startReplicaRig, type ReplicaRig } from '../helpers/replica-config.js';
import { ensureBuilt } from './build.js';

const ACCOUNTS = ['acme', 'globex'];

let rig: ReplicaRig;
beforeAll(async () => {
  await ensureBuilt();
  rig = await startReplicaRig({ accounts: ACCOUNTS, devices: 2, seed: 51, prefix: 'boxwatch-rebalance-' });
}, 120_000);
afterAll(async () => {
  await rig?.close();
});

it('a restarted replica (the lowest id) takes nothing back from balanced replicas: no lease moves on its return', async () => {
  const dbPath = join(rig.dir, 'boxwatch.db');
  /** Replica `name`'s configuration, with a 10 s lease (a loaded machine does not make it step down). */
  const config = async (name: string): Promise<string> => {
    const path = await rig.config(name, `{ path: "${dbPath}" }`);
    writeFileSync(path, readFileSync(path, 'utf8').replace('cluster: { lease: 3s,', 'cluster: { lease: 10s,'));
    return path;
  };
  const leases = () => new Map(sqliteRows<{ account: string; holder: string | null; token: number }>(dbPath, 'SELECT account, holder, token FROM leases').map((l) => [l.account, { holder: l.holder, token: l.token }]));
  const holders = () => ACCOUNTS.map((a) => leases().get(a)?.holder ?? null);
  const tokens = () => ACCOUNTS.map((a) => leases().get(a)?.token ?? 0);
  const beats = (): Map<string, number> => new Map(sqliteRows<{ id: string; beat_at: number }>(dbPath, 'SELECT id, beat_at FROM replicas').map((r) => [r.id, r.beat_at]));
  /** Waits until each of `names` has beaten `rounds` more times (each beat starts a round that plans the balance). */
  const rounds = async (names: readonly string[], rounds: number, what: string): Promise<void> => {
    const seen = new Map<string, number[]>();
    await rig.daemons.until(`${what}: ${rounds} rounds of ${names.join(', ')}`, () => {
      const now = beats();
      for (const n of names) {
        const at = now.get(n);
        const list = seen.get(n) ?? [];
        if (at !== undefined && list.at(-1) !== at) list.push(at);
        seen.set(n, list);
      }
      return names.every((n) => (seen.get(n)?.length ?? 0) > rounds);
    }, 120_000);
  };

  const a = rig.daemons.spawn(await config('replica-a'));
  rig.daemons.spawn(await config('replica-b'));
  await rig.daemons.until('replica-a and replica-b lead one account each', () => [...holders()].sort().join() === 'replica-a,replica-b', 90_000);
  const aAccount = ACCOUNTS[holders().indexOf('replica-a')] as string;
  rig.daemons.spawn(await config('replica-c'));
  const started = tokens();
  await rounds(['replica-a', 'replica-b', 'replica-c'], 3, 'replica-c started');
  expect(holders().filter((h) => h === 'replica-c')).toEqual([]); // 1, 1 and 0: balanced
  expect(tokens()).toEqual(started);

  // replica-a restarts: SIGTERM releases its lease, replica-c (leading none) takes it.
  a.kill('SIGTERM');
  expect(await rig.daemons.exited(a)).toEqual({ code: 0, signal: null });
  await rig.daemons.until(`replica-c leads ${aAccount}`, () => leases().get(aAccount)?.holder === 'replica-c', 60_000);
  const away = tokens();
  expect(away).toEqual(ACCOUNTS.map((x, i) => (started[i] as number) + (x === aAccount ? 1 : 0)));
  rig.daemons.spawn(await config('replica-a'));
  await rounds(['replica-a', 'replica-b', 'replica-c'], 3, 'replica-a back');
  // Back, and balanced without it: it leads nothing, and no lease moved.
  expect(holders().filter((h) => h === 'replica-a')).toEqual([]);
  expect(tokens()).toEqual(away);
}, 300_000);
