/**
 * Which replica ids two processes run under, as `boxwatch status` reads the replica rows
 * (src/cluster/servers.ts): a row whose last heartbeat recorded another process, while that
 * heartbeat is younger than a lease time (the processes still run). `boxwatch status --db`, not
 * knowing the configured lease, judges with the longest one allowed (10 minutes).
 */
import { expect, it } from 'vitest';
import { DEFAULT_LEASE_MS, MAX_LEASE_MS } from '../../src/domain/leases.js';
import type { Replica } from '../../src/domain/leases.js';
import { accountServers, replicaConflicts } from '../../src/cluster/servers.js';
import { conflictLine } from '../../src/cli/status.js';

const NOW = Date.parse('2026-05-01T09:00:00Z');
const row = (id: string, beatAt: number, sharedWith: Replica['sharedWith']): Replica => ({ id, host: 'vm1', pid: 100, startedAt: NOW - 3_600_000, beatAt, sharedWith, archive: null });

it('a row that recorded another process is a conflict while its heartbeat is younger than the lease time; rows without one never are', () => {
  const replicas = [row('replica-a', NOW - 5 * 60_000, { host: 'vm2', pid: 200 }), row('replica-b', NOW - 1_000, null), row('replica-c', NOW - 11 * 60_000, { host: 'vm3', pid: 300 })];
  // cluster.lease 30 s (the configuration given): the 5-minute-old heartbeat is of processes gone.
  expect(replicaConflicts(replicas, NOW, 30_000)).toEqual([]);
  // The lease not known (`--db`): within the longest lease, replica-a's processes may still run.
  expect(replicaConflicts(replicas, NOW, MAX_LEASE_MS)).toEqual([{ replica: 'replica-a', processes: [{ host: 'vm1', pid: 100 }, { host: 'vm2', pid: 200 }], heartbeatAt: NOW - 5 * 60_000 }]);
});

it("an account's server says the holder's id is shared only while it serves", () => {
  const replicas = [row('replica-a', NOW - 1_000, { host: 'vm2', pid: 200 })];
  const servers = accountServers(
    [
      { account: 'acme', holder: 'replica-a', token: 3, expiresAt: NOW + 20_000 },
      { account: 'globex', holder: 'replica-a', token: 1, expiresAt: NOW - 1 },
    ],
    replicas,
    NOW,
  );
  expect(servers.map((s) => [s.account, s.state, s.sharedWith])).toEqual([
    ['acme', 'serving', { host: 'vm2', pid: 200 }],
    ['globex', 'expired', null],
  ]);
});

it("status's line: in the present while the heartbeat is younger than the lease (configured, else the default), in the past after (the two may have died since)", () => {
  const [recent] = replicaConflicts([row('replica-a', NOW - 2_000, { host: 'vm2', pid: 200 })], NOW, MAX_LEASE_MS);
  const [old] = replicaConflicts([row('replica-a', NOW - 5 * 60_000, { host: 'vm2', pid: 200 })], NOW, MAX_LEASE_MS);
  expect(conflictLine(recent!, NOW, DEFAULT_LEASE_MS)).toBe(
    'replica_id conflict: two boxwatch processes run as replica replica-a (host vm1, pid 100; host vm2, pid 200; heartbeat just now), both working the same accounts: give each replica its own cluster.replica_id (or none), and restart them',
  );
  expect(conflictLine(old!, NOW, DEFAULT_LEASE_MS)).toMatch(/^replica_id conflict: two boxwatch processes ran as replica replica-a \(host vm1, pid 100; host vm2, pid 200; heartbeat 5m ago\), /);
  // `--config` with `cluster.lease: 10m`: a heartbeat 5 minutes old is within the lease, the two still run.
  expect(conflictLine(old!, NOW, 10 * 60_000)).toMatch(/^replica_id conflict: two boxwatch processes run as replica replica-a /);
});
