/**
 * A `boxwatch run` process as one replica of a cluster (`cluster:` in the configuration): its
 * coordinator (coordinator.ts) on the store's lease repository, its id, the `boxwatch_lease_held`
 * gauge on the daemon's registry and what `/healthz` says about it. The app asks it which
 * accounts to work for (`holds`, `fence`, `fences`) and tells it when a fenced write was refused
 * (`lost`); src/app.ts wires the rest.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Gauge } from 'prom-client';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { Coordinator, newReplicaId, type AccountWork } from './coordinator.js';
import { otherReplicaArchives, type Fence, type LeaseRepository, type ReplicaArchive } from '../domain/leases.js';

export interface ReplicaOptions {
  config: { lease: number; replicaId?: string };
  repo: LeaseRepository;
  accounts: () => readonly string[];
  work: AccountWork;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  /** The id of this replica's archive directory (src/archive/identity.ts), announced with its heartbeats; null: none (yet). */
  archive?: () => string | null;
}

export interface Replica {
  readonly id: string;
  holds(account: string): boolean;
  fence(account: string): Fence | undefined;
  fences(): Fence[];
  lost(fence: Fence): void;
  /** What /healthz says: this replica and the accounts it leads. */
  health(): { id: string; leads: string[] };
  /** The archive directories the other live replicas announce (read from the database; leases.ts `otherReplicaArchives`). */
  otherArchives(): Promise<ReplicaArchive[]>;
  start(): void;
  stop(): Promise<void>;
}

export function createReplica(o: ReplicaOptions): Replica {
  const host = hostname();
  const id = o.config.replicaId ?? newReplicaId(host, process.pid);
  const coordinator = new Coordinator({
    repo: o.repo,
    replica: { id, host, pid: process.pid, instance: randomBytes(8).toString('hex') },
    accounts: o.accounts,
    work: o.work,
    clock: o.clock,
    leaseMs: o.config.lease,
    logger: o.logger.child({ replica: id }),
    ...(o.archive && { archive: o.archive }),
  });
  new Gauge({
    name: 'boxwatch_lease_held',
    help: 'Replicas: 1 for each account this replica leads (polls, evaluates and delivers), 0 for the others.',
    labelNames: ['account'] as const,
    registers: [o.metrics.registry],
    collect() {
      this.reset();
      for (const account of o.accounts()) this.set({ account }, coordinator.holds(account) ? 1 : 0);
    },
  });
  new Gauge({
    name: 'boxwatch_replica_id_conflict',
    help: 'Replicas: 1 while another boxwatch process runs with this replica_id (give each replica its own cluster.replica_id), else 0.',
    registers: [o.metrics.registry],
    collect() {
      this.set(coordinator.sharedWith() === null ? 0 : 1);
    },
  });
  return {
    id,
    holds: (account) => coordinator.holds(account),
    fence: (account) => coordinator.fence(account),
    fences: () => coordinator.fences(),
    lost: (fence) => coordinator.lost(fence),
    health: () => ({ id, leads: coordinator.leading() }),
    otherArchives: async () => otherReplicaArchives(await o.repo.replicas(), id, o.clock.now(), coordinator.leaseMs),
    start: () => {
      o.logger.info({ replica: id, leaseMs: coordinator.leaseMs }, 'running as a replica: accounts are leased among the replicas of this database');
      coordinator.start();
    },
    stop: () => coordinator.stop(),
  };
}

/** This process as a replica (`cluster:`); null without a `cluster:` section: it holds the database alone. */
export function replicaOf(cluster: ReplicaOptions['config'] | undefined, options: Omit<ReplicaOptions, 'config'>): Replica | null {
  return cluster === undefined ? null : createReplica({ ...options, config: cluster });
}
