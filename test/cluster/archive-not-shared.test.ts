/**
 * Two replicas whose `archive.dir` is not shared (a local directory each, as on two hosts): no
 * archived recording's row is lost, and the misconfiguration is reported. Two replicas (createApp
 * with `cluster:`, their coordinators running on one fake clock) share a real SQLite file, poll
 * one simulator over real HTTP as two accounts (one led by each), and archive the recordings,
 * served by a real recording host, into a directory each (src/archive/identity.ts: each directory
 * gets its own archive id).
 *
 * Each replica raises its `archive_failing` alert (`unshared_dir`) at its next archive pass after
 * the other announces its directory, says in its log that archive.dir is not shared and counts the
 * other's recordings in `boxwatch_archive_recordings_elsewhere` (counted when they appear, then hourly);
 * `boxwatch recordings verify` (the built CLI) on either
 * directory checks that directory's recordings and names the other's as elsewhere, not missing;
 * `boxwatch status` ends with a line saying the recordings are in two archive directories.
 * The replicas announce their archive directories with their heartbeats: through a day without
 * calls (nothing archived anywhere) the alert stays while both run. Then replica-b stops and
 * replica-a, alone, runs retention past every recording's age: it deletes its own old files and
 * rows, and keeps every row of replica-b's archive, whose files stay whole on replica-b's disk
 * (before, it forgot them: their files were never deleted, and verify called them missing). Its
 * alert ends at its first pass after replica-b stopped, with nothing done to the database; the
 * gauge, the log and `recordings verify` still list replica-b's recordings until the files are
 * moved into one directory and their rows given its id.
 */
import { mkdirSync, readdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { ARCHIVE_MARKER } from '../../src/archive/identity.js';
import { accountOf } from '../../src/box-id.js';
import { parseConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/log.js';
import { parseScenario } from '../../src/sim/scenario.js';
import { startSimulator } from '../../src/sim/server.js';
import { openStore, type SqliteStore } from '../../src/store/index.js';
import { startRecordingHost } from '../archive/recording-host.js';
import { ensureBuilt } from '../e2e/build.js';
import { runBuilt } from '../helpers/cli-process.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { appTeardown } from '../helpers/app-teardown.js';
import { until } from '../helpers/wait.js';

const KEY = 'archive-replicas-key';
const M = 60_000;

const teardown = appTeardown();
beforeAll(async () => {
  await ensureBuilt();
}, 300_000);

const flush = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

/** The recording and sidecar files under `root` (not the marker). */
function filesUnder(root: string): string[] {
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name !== ARCHIVE_MARKER)
    .map((e) => join(e.parentPath, e.name).slice(root.length + 1))
    .sort();
}

/**
 * Replicas of `accounts` (one simulator, over real HTTP, serving each account's calls, recordings
 * served by a real recording host) on one real SQLite file, their coordinators on one fake clock,
 * each with an archive.dir of its own (`archiveOf`), its log kept (`logs`).
 */
async function replicaSet(accounts: readonly string[], retention: string, startedAgoMs = 4 * 3_600_000) {
  // Started hours ago (a whole minute), so that the CLI's wall-clock views hold the calls.
  const clock = new FakeClock(Math.floor((Date.now() - startedAgoMs) / M) * M);
  const host = teardown.closeAfter(await startRecordingHost());
  const sim = (teardown.sim = await startSimulator({
    port: 0,
    key: KEY,
    devices: 2,
    seed: 7,
    clock,
    historyCalls: 0,
    recordingsUrl: host.url,
    scenario: parseScenario('calls: { per_box_per_hour: 30 }\ntimeline:\n  - { at: 0s, box: "BX-*", connect: true }\n', 'archive-replicas'),
  }));
  host.target = sim.url;
  const dir = teardown.tempDir('boxwatch-archive-replicas-');
  const dbPath = join(dir, 'boxwatch.db');
  const archiveOf = (name: string): string => join(dir, `${name}-recordings`);
  const logs = new Map<string, string[]>();
  const replica = (name: string): App<SqliteStore> => {
    const lines: string[] = [];
    logs.set(name, lines);
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const config = parseConfig(
      `
gateways:
${accounts.map((account) => `  - { name: ${account}, base_url: "${sim.url}", secret_key: "\${KEY}", schedule: "0 0 1 1 *" }`).join('\n')}
storage: { path: "${dbPath}" }
cluster: { lease: 3s, replica_id: ${name} }
calls: { schedule: "0 0 1 1 *", per_page: 100 }
archive: { dir: "${archiveOf(name)}", concurrency: 2, retention: ${retention} }
rules:
  - { name: archive-failing, kind: archive_failing, severity: critical }
notifiers: []
http: false
`,
      { KEY },
      name,
    );
    return teardown.add(createApp({ config, logger: createLogger({ level: 'info', destination }), clock, store: openStore(dbPath, { clock }) }));
  };
  const run = async (ms: number): Promise<void> => {
    for (let t = 0; t < ms; t += 1_000) {
      clock.advance(1_000);
      await flush();
    }
  };
  const holders = (app: App<SqliteStore>): Record<string, string | null> => Object.fromEntries(app.store.leases.leases().map((l) => [l.account, l.holder]));
  /**
   * Simulated minutes: each replica's call sync of the accounts it leads and, as in the daemon, an
   * archive pass after it; a replica that leads nothing (a standby) runs neither.
   */
  const minutes = async (n: number, replicas: App<SqliteStore>[]): Promise<void> => {
    for (let i = 0; i < n; i++) {
      await run(M);
      for (const app of replicas) {
        if (!Object.values(holders(app)).includes(app.replica?.id ?? '')) continue;
        await app.runCallsOnce();
        await app.runArchiveOnce();
      }
    }
  };
  const elsewhere = async (app: App<SqliteStore>): Promise<number> => (await app.metrics.registry.getSingleMetric('boxwatch_archive_recordings_elsewhere')?.get())?.values[0]?.value ?? Number.NaN;

  /** Once the replica has read its archive id (at start, on the real file system), and its next heartbeats carry it. */
  const announced = async (app: App<SqliteStore>): Promise<void> => {
    await until('the replica to read its archive id', () => app.archive?.id() !== null);
    await run(2_000);
  };
  return { clock, dbPath, archiveOf, logs, replica, run, holders, minutes, elsewhere, announced };
}

it('replicas with an archive.dir each: every row kept, the other directory reported, retention deletes only its own archive’s files', async () => {
  const { clock, dbPath, archiveOf, logs, replica, run, holders, minutes, elsewhere, announced } = await replicaSet(['acme', 'globex'], '3h');
  const a = replica('replica-a');
  await a.start();
  await run(2_000);
  const b = replica('replica-b');
  await b.start();
  await run(10_000);
  await announced(a);
  await announced(b);
  const leaders = holders(a);
  expect(Object.values(leaders).sort()).toEqual(['replica-a', 'replica-b']); // one account each
  const aAccount = Object.keys(leaders).find((x) => leaders[x] === 'replica-a') as string;
  const bAccount = Object.keys(leaders).find((x) => leaders[x] === 'replica-b') as string;

  /** This replica's archive_failing alerts not at rest: [account of the cycle that judged it, status, value]. */
  const archiveAlerts = async (app: App<SqliteStore>, account: string): Promise<[string, string, unknown][]> => {
    await app.runOnce(account); // the cycle of the first account the replica leads judges its archive
    return [...(await app.alerts.states()).values()].filter((st) => st.rule === 'archive-failing' && st.status !== 'resolved').map((st) => [accountOf(st.serial), st.status, st.value]);
  };
  // Each replica announced its directory at start: each one's first pass raises its own alert, before any recording is archived.
  await minutes(1, [a, b]);
  expect(await archiveAlerts(a, aAccount)).toEqual([[aAccount, 'firing', 'unshared_dir']]);
  for (let i = 0; i < 30 && a.store.recordings.archives().length < 2; i++) await minutes(1, [a, b]);
  expect(a.store.recordings.archives()).toHaveLength(2); // each replica archived into its own directory
  for (const app of [a, b]) await app.runArchiveOnce();
  expect(await archiveAlerts(a, aAccount)).toEqual([[aAccount, 'firing', 'unshared_dir']]);
  expect((await archiveAlerts(b, bAccount)).sort()).toEqual([[aAccount, 'firing', 'unshared_dir'], [bAccount, 'firing', 'unshared_dir']].sort());

  await minutes(25, [a, b]);
  // The other archive directories are counted (the gauge) when they appear, then hourly.
  await run(36 * M);
  for (const app of [a, b]) await app.runArchiveOnce();
  const archived = a.store.recordings.archivedAll();
  const ids = [...new Set(archived.map((r) => r.archive))];
  expect(ids).toHaveLength(2); // two directories, two archives
  const ofA = archived.filter((r) => r.callId.startsWith(`${aAccount}/`));
  const ofB = archived.filter((r) => r.callId.startsWith(`${bAccount}/`));
  expect(ofA.length).toBeGreaterThan(3);
  expect(ofB.length).toBeGreaterThan(3);
  expect(new Set(ofA.map((r) => r.archive)).size).toBe(1);
  expect(new Set(ofB.map((r) => r.archive)).size).toBe(1);
  const [idA, idB] = [ofA[0]?.archive as string, ofB[0]?.archive as string];
  expect(filesUnder(archiveOf('replica-a'))).toEqual(ofA.flatMap((r) => [r.path, r.sidecar]).sort());
  expect(filesUnder(archiveOf('replica-b'))).toEqual(ofB.flatMap((r) => [r.path, r.sidecar]).sort());

  // Reported: each replica's log names the other's archive once, and its gauge counts the other's recordings.
  const notShared = (name: string) => (logs.get(name) as string[]).filter((l) => l.includes('archive.dir is not shared between the replicas'));
  expect(notShared('replica-a')).toHaveLength(1);
  expect(notShared('replica-a')[0]).toContain(`"other":"${idB}"`);
  expect(notShared('replica-b')).toHaveLength(1);
  expect(notShared('replica-b')[0]).toContain(`"other":"${idA}"`);
  expect(await elsewhere(a)).toBe(ofB.length);
  expect(await elsewhere(b)).toBe(ofA.length);

  // `recordings verify` on each directory: its own recordings all match; the other's are elsewhere, not missing.
  for (const [name, own, id, otherId, other] of [
    ['replica-a', ofA, idA, idB, ofB],
    ['replica-b', ofB, idB, idA, ofA],
  ] as const) {
    const verify = await runBuilt(['recordings', 'verify', '--db', dbPath, '--dir', archiveOf(name)]);
    expect(verify.code, verify.out + verify.err).toBe(0);
    expect(verify.out).not.toContain('MISSING');
    expect(verify.out).toContain(`${own.length} recordings (${own.length * 2} files with their sidecars) checked in ${archiveOf(name)}: all match`);
    expect(verify.out).toContain(`ELSEWHERE ${other.length} recordings in archive ${otherId}, another directory than this one (${id})`);
    const json = await runBuilt(['recordings', 'verify', '--db', dbPath, '--dir', archiveOf(name), '--format', 'json']);
    expect(JSON.parse(json.out)).toMatchObject({ archive: id, recordings: own.length, bad: [], elsewhere: [{ archive: otherId, recordings: other.length }] });
  }

  // `boxwatch status` says so too.
  const status = await runBuilt(['status', '--db', dbPath]);
  expect(status.code, status.err).toBe(0);
  expect(status.out).toContain(`archive: the database lists recordings in 2 archive directories (${[`${idA}: ${ofA.length}`, `${idB}: ${ofB.length}`].sort().join(', ')}); each archive.dir checks and deletes only its own`);

  // A day without calls, both replicas running: nothing is archived anywhere, and replica-a's
  // alert stays (before: it ended a day after replica-b's last recording, and came back with its next one).
  clock.advance(25 * 3_600_000);
  await run(5_000); // the leases renewed (or taken again) after the jump
  const ledByA = Object.keys(holders(a)).find((x) => holders(a)[x] === 'replica-a') as string;
  await a.runArchiveOnce();
  expect(await archiveAlerts(a, ledByA)).toContainEqual([ledByA, 'firing', 'unshared_dir']);

  // replica-b stops; replica-a, alone, leads both accounts and, past the retention of every recording so far, runs retention.
  await teardown.stop(b);
  await run(5_000);
  expect(Object.values(holders(a))).toEqual(['replica-a', 'replica-a']);
  clock.advance(4 * 3_600_000);
  await run(5_000); // replica-a's leases renewed after the jump
  await a.runArchiveOnce();
  const after = a.store.recordings.archivedAll();
  // Its own old recordings are gone, files and rows; every one of replica-b's archive is kept, its files whole on replica-b's disk.
  expect(after.filter((r) => ofA.some((o) => o.callId === r.callId))).toEqual([]);
  expect(after.filter((r) => r.archive === idB).map((r) => r.callId).sort()).toEqual(ofB.map((r) => r.callId).sort());
  expect(filesUnder(archiveOf('replica-a')).filter((f) => ofA.some((r) => r.path === f || r.sidecar === f))).toEqual([]);
  const verifyB = await runBuilt(['recordings', 'verify', '--db', dbPath, '--dir', archiveOf('replica-b')]);
  expect(verifyB.code, verifyB.out + verifyB.err).toBe(0);
  expect(verifyB.out).toContain(`${ofB.length} recordings (${ofB.length * 2} files with their sidecars) checked in ${archiveOf('replica-b')}: all match`);
  // No other replica runs: replica-a's pass after replica-b stopped ended its alert, with nothing done to the database
  // (before: it stayed until a day after replica-b's last recording); replica-b's alert, of the account replica-a leads
  // now, resolves at that account's next cycle. replica-b's recordings stay listed (the gauge, `recordings verify`).
  expect(logs.get('replica-a')?.filter((l) => l.includes('archive_failing (unshared_dir) ends'))).toHaveLength(1);
  await a.runOnce(bAccount);
  expect((await archiveAlerts(a, aAccount)).filter(([, status]) => status === 'firing')).toEqual([]);
  expect(await elsewhere(a)).toBe(ofB.length);
  const verifyA = await runBuilt(['recordings', 'verify', '--db', dbPath, '--dir', archiveOf('replica-a')]);
  expect(verifyA.out).toContain(`ELSEWHERE ${ofB.length} recordings in archive ${idB}, another directory than this one (${idA})`);

  // Tidying up (docs/operations.md): the files moved into one directory, their rows given its id. The next pass lists none elsewhere.
  for (const r of ofB) {
    for (const f of [r.path, r.sidecar]) {
      mkdirSync(dirname(join(archiveOf('replica-a'), f)), { recursive: true });
      renameSync(join(archiveOf('replica-b'), f), join(archiveOf('replica-a'), f));
    }
  }
  a.store.recordings.claim(ofB.map((r) => r.callId), idA);
  await a.runArchiveOnce();
  expect(await elsewhere(a)).toBe(0);
  expect(logs.get('replica-a')?.filter((l) => l.includes('no recordings in another archive directory any more'))).toHaveLength(1);
}, 180_000);

it('a standby (it leads nothing, so it runs no archive pass) with its own archive.dir is seen at once; after a failover onto it the old replica, gone, is listed, not alerted, and seen again when it comes back', async () => {
  // Started now: the replicas' heartbeats, on the fake clock, are live for `boxwatch status` (the wall clock) at the end.
  const { dbPath, logs, replica, run, holders, minutes, elsewhere, announced } = await replicaSet(['acme'], '30d', 0);
  const notShared = (name: string): number => (logs.get(name) as string[]).filter((l) => l.includes('archive.dir is not shared between the replicas')).length;
  /** The replica's archive_failing alerts not at rest, as the cycle of acme (on this replica) judges them: [status, value]. */
  const archiveAlert = async (app: App<SqliteStore>): Promise<[string, unknown][]> => {
    await app.runOnce('acme');
    return [...(await app.alerts.states()).values()].filter((st) => st.rule === 'archive-failing' && st.status !== 'resolved').map((st) => [st.status, st.value]);
  };

  const a = replica('replica-a');
  await a.start();
  await run(2_000);
  const b = replica('replica-b');
  await b.start();
  await announced(b);
  expect(holders(a)).toEqual({ acme: 'replica-a' });
  // replica-b leads nothing, runs no archive pass, and still announces its directory: replica-a's first pass raises
  // the alert, before any recording is split (before: nothing until replica-b archived, after a failover).
  await minutes(1, [a, b]);
  expect(await archiveAlert(a)).toEqual([['firing', 'unshared_dir']]);
  expect(notShared('replica-a')).toBe(1);
  await minutes(15, [a, b]);
  expect(a.store.recordings.archives()).toHaveLength(1); // only replica-a archived

  // replica-a stops; replica-b takes acme over and archives into its own directory: acme's recordings are now split.
  // No other replica runs: replica-b lists replica-a's directory (the gauge, a warning), and the alert (acme's) resolves.
  await teardown.stop(a);
  await run(5_000);
  expect(holders(b)).toEqual({ acme: 'replica-b' });
  await minutes(15, [b]);
  expect(b.store.recordings.archives()).toHaveLength(2);
  const ofA = b.store.recordings.archives().find((x) => x.archive !== b.archive?.id())?.recordings ?? 0;
  expect(ofA).toBeGreaterThan(3);
  expect(await elsewhere(b)).toBe(ofA);
  expect(await archiveAlert(b)).toEqual([]);
  expect(notShared('replica-b')).toBe(0);
  const alone = await runBuilt(['status', '--db', dbPath]);
  expect(alone.out).toContain('archive: the database lists recordings in 2 archive directories');
  expect(alone.out).not.toContain('not shared');

  // replica-a comes back, a standby now: it announces its directory at start, and replica-b's next pass raises the alert.
  const a2 = replica('replica-a');
  await a2.start();
  await announced(a2);
  await minutes(1, [a2, b]);
  expect(holders(b)).toEqual({ acme: 'replica-b' });
  expect(await archiveAlert(b)).toEqual([['firing', 'unshared_dir']]);
  expect(notShared('replica-b')).toBe(1);
  const status = await runBuilt(['status', '--db', dbPath]);
  expect(status.out).toMatch(/archive\.dir not shared: the live replicas archive into 2 directories \(replica-a: [^,]+, replica-b: [^)]+\)/);
}, 120_000);
