/**
 * `boxwatch status`: one line per box, the boxes in trouble first: boxes with firing alerts, then
 * by condition. The ALERTS column lists each box's open alerts (`box-offline!` firing, `battery-low`
 * pending, `box-offline! (acked by alice)` acknowledged); gateway alerts follow the table.
 */
import type { Command } from 'commander';
import { DEFAULT_LEASE_MS, MAX_LEASE_MS } from '../domain/leases.js';
import { otherReplicaArchives, replicaLive, type LeaseRepository } from '../domain/leases.js';
import { accountServerJson, accountServers, replicaConflicts, type AccountServer, type ReplicaConflict } from '../cluster/servers.js';
import { accountOf, isFleetKey, splitBoxKey } from '../box-id.js';
import { withAcks, type Ack, type AckRepository } from '../alerts/acks.js';
import type { AlertState } from '../alerts/types.js';
import type { AlertQueries } from '../alerts/repositories.js';
import type { Config } from '../config/index.js';
import type { Store } from '../domain/store.js';
import { relativeTime } from '../time-format.js';
import { boxViewJson, boxViews, openAlertsBySerial, staleAfterMs } from '../views/boxes.js';
import { terminalSafe } from './call-gateway.js';
import { DAY_MS, type CallsRepo, type FailureCount } from '../domain/calls.js';
import type { RecordingsRepo } from '../domain/recordings.js';
import { failureCell } from '../views/calls.js';
import type { CliContext, RegisterCommand } from './context.js';
import { formatOption, printRows, type OutputFormat } from './output.js';
import { dbOption, withStore } from './store-access.js';

/**
 * Each box's final calls of the last 24 hours and the failed among them (none from a database
 * without calls; a database from before calls has no calls table).
 */
async function callsOfLastDay(calls: Pick<CallsRepo, 'failureCounts'>, now: number): Promise<ReadonlyMap<string, FailureCount>> {
  try {
    return await calls.failureCounts({ since: now - DAY_MS });
  } catch {
    return new Map();
  }
}

/** What the status table reads: the boxes, their open alerts with their acks, their calls. */
export interface StatusSource extends Pick<Store, 'boxes'> {
  alerts: Pick<AlertQueries, 'states'>;
  acks: Pick<AckRepository, 'latestByKey'>;
  calls: Pick<CallsRepo, 'failureCounts'>;
  /** Replicas (`cluster:`): who leads each account (absent or empty: one daemon holds the database). */
  leases?: Pick<LeaseRepository, 'leases' | 'replicas'>;
  /** The recording archive: recordings of several archive directories are a hint that archive.dir is not shared. */
  recordings?: Pick<RecordingsRepo, 'archives'>;
}

/** `box-offline! (acked by alice), battery-low`: `!` marks a firing alert, no mark a pending one. */
export function alertsCell(alerts: readonly (Pick<AlertState, 'rule' | 'status'> & { ack?: Ack | null })[]): string {
  return alerts.map((a) => `${a.rule}${a.status === 'firing' ? '!' : ''}${a.ack ? ` (acked by ${terminalSafe(a.ack.by)})` : ''}`).join(', ');
}

export const registerStatus: RegisterCommand = (program: Command, ctx: CliContext) => {
  program
    .command('status')
    .description('one line per box, the boxes in trouble first')
    .option('-c, --config <file>', 'configuration file')
    .addOption(dbOption())
    .addOption(formatOption(['table', 'json']))
    .action((opts: { config?: string; format: OutputFormat }) =>
      withStore(opts, ctx, (store, now, { config }) => printStatus(ctx, store, now, opts.format, config)),
    );
};

/**
 * The status table (or JSON: the box views, src/views/boxes.ts) of every box the store knows; also
 * printed at the end of the demo. A box gone from the device list says `missing` under CONNECTED.
 */
export async function printStatus(ctx: CliContext, store: StatusSource, now: number, format: OutputFormat, config: Pick<Config, 'rules' | 'cluster'> | null = null): Promise<void> {
  const states = withAcks((await store.alerts.states()).values(), await store.acks.latestByKey(), now);
  const views = boxViews(await store.boxes(), states, now, staleAfterMs(config));
  const calls = await callsOfLastDay(store.calls, now);
  // With boxes of several accounts, an ACCOUNT column, and SERIAL the gateway's serial.
  const accounts = new Set(views.map((v) => v.box.account));
  const several = accounts.size > 1;
  // Replicas: who serves each account (src/cluster/servers.ts); none without lease rows.
  // The replica rows are read once: for the servers and for the replica-id conflicts below.
  const replicas = store.leases === undefined ? [] : await store.leases.replicas();
  const servers = store.leases === undefined ? [] : accountServers(await store.leases.leases(), replicas, now);
  const serverOf = new Map(servers.map((s) => [s.account, s]));
  printRows(ctx, format, {
    headers: [...(several ? ['ACCOUNT'] : []), 'SERIAL', 'NAME', 'CONNECTED', 'BATTERY', 'SIGNAL', 'LAST SEEN', 'FIRMWARE', 'CALLS FAILED', 'ALERTS', 'STATE'],
    rows: views.map(({ box: b, state, alerts: open }) => [
      ...(several ? [terminalSafe(b.account)] : []),
      terminalSafe(several ? splitBoxKey(b.serial).serial : b.serial),
      terminalSafe(b.name),
      state === 'missing' ? 'missing' : b.connected ? 'yes' : 'no',
      b.battery === null ? '-' : `${b.battery}%`,
      b.signal === null ? '-' : `${b.signal} dBm`,
      relativeTime(b.lastSeen, now),
      terminalSafe(b.firmware),
      failureCell(calls.get(b.serial)),
      alertsCell(open),
      b.missingSince !== null ? `missing since ${relativeTime(b.missingSince, now)}` : state,
    ]),
    json: views.map((v) => {
      const server = serverOf.get(v.box.account);
      return { ...boxViewJson(v), calls24h: calls.get(v.box.serial) ?? null, ...(servers.length > 0 && { servedBy: server === undefined ? null : accountServerJson(server, now) }) };
    }),
    empty: 'no boxes yet: run `boxwatch run` (or `boxwatch demo`) to poll the gateway',
  });
  // The gateway alerts of each account (its fleet key: '' for a single gateway).
  const gateway = [...openAlertsBySerial(states)].filter(([key]) => isFleetKey(key)).sort(([a], [b]) => a.localeCompare(b));
  if (format === 'table') {
    for (const [key, open] of gateway) {
      const label = key === '' ? 'gateway alerts' : `gateway alerts (${terminalSafe(accountOf(key))})`;
      ctx.out(`\n${label}: ${open.map((a) => `${alertsCell([a])} (${terminalSafe(a.summary ?? a.status)}, since ${relativeTime(a.since, now)})`).join(', ')}\n`);
    }
  }
  if (format === 'table' && servers.length > 0) ctx.out(`\nreplicas:\n${leaderLines(servers, now).map((l) => `  ${l}`).join('\n')}\n`);
  // Without the configuration (`--db`), its lease time is not known: the longest one allowed, and
  // the line says how old the heartbeat is (in the past tense past the default lease).
  const lease = config?.cluster?.lease;
  const conflicts = format === 'table' ? replicaConflicts(replicas, now, lease ?? MAX_LEASE_MS) : [];
  for (const c of conflicts) ctx.out(`\n${conflictLine(c, now, lease ?? DEFAULT_LEASE_MS)}\n`);
  const archives = format === 'table' && store.recordings !== undefined ? await store.recordings.archives() : [];
  if (archives.length > 1) {
    ctx.out(
      `\narchive: the database lists recordings in ${archives.length} archive directories (${archives.map((a) => `${terminalSafe(a.archive)}: ${a.recordings}`).join(', ')}); ` +
        'each archive.dir checks and deletes only its own recordings (the others are an earlier archive.dir\'s, or another replica\'s: docs/operations.md, "The recording archive with replicas")\n',
    );
  }
  // The live replicas' archive directories, as their heartbeats announce them (archive_failing, unshared_dir, on the daemons),
  // live as the daemons judge it: within the configured lease (`--db` alone: the default one, as the daemons' alert would end).
  const announced = format === 'table' ? otherReplicaArchives(replicas, '', now, lease ?? DEFAULT_LEASE_MS) : [];
  if (new Set(announced.map((r) => r.archive)).size > 1) {
    ctx.out(
      `\narchive.dir not shared: the live replicas archive into ${new Set(announced.map((r) => r.archive)).size} directories (${announced.map((r) => `${terminalSafe(r.replica)}: ${terminalSafe(r.archive)}`).join(', ')}); ` +
        'give them one shared archive.dir (docs/operations.md, "The recording archive with replicas")\n',
    );
  }
}

/**
 * What to do about two processes running under one replica id: in the present while the heartbeat
 * is younger than `leaseMs` (the configured lease; `--db` alone: the default one), else in the past
 * (the two may have died since).
 */
export function conflictLine(c: ReplicaConflict, now: number, leaseMs: number): string {
  const [a, b] = c.processes.map((p) => `host ${terminalSafe(p.host)}, pid ${p.pid}`);
  const tense = replicaLive({ beatAt: c.heartbeatAt }, now, leaseMs) ? 'run' : 'ran';
  return `replica_id conflict: two boxwatch processes ${tense} as replica ${terminalSafe(c.replica)} (${a}; ${b}; heartbeat ${relativeTime(c.heartbeatAt, now)}), both working the same accounts: give each replica its own cluster.replica_id (or none), and restart them`;
}

/** `acme: replica-b (host vm, pid 12, heartbeat 2s ago)`, or `acme: nobody (lease expired 5s ago)`: who serves each account. */
export function leaderLines(servers: readonly AccountServer[], now: number): string[] {
  return servers.map((s) => {
    if (s.state !== 'serving') return `${terminalSafe(s.account)}: nobody (${s.state === 'released' ? 'released' : `lease expired ${relativeTime(s.leaseExpiresAt ?? now, now)}`})`;
    const where = s.host === null ? '' : ` (host ${terminalSafe(s.host)}, pid ${s.pid ?? '?'}, heartbeat ${relativeTime(s.heartbeatAt ?? now, now)})`;
    return `${terminalSafe(s.account)}: ${terminalSafe(s.replica ?? '')}${where}`;
  });
}
