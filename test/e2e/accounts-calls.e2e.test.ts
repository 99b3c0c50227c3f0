/**
 * Calls, test calls and the recording archive of several accounts, end to end: one simulator over
 * real HTTP serving two accounts with the same serials (`sharedSerials`: BX-00001..3 in both, and
 * both call books numbering their calls from the same first id), the daemon built from a
 * `gateways:` configuration (one gateway client per account), a real SQLite file, real archive
 * files in a temporary directory and a real Slack receiver. One FakeClock; every simulated minute
 * a call sync, an archive pass, a poll cycle of each account and a delivery pass run.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { ARCHIVE_MARKER } from '../../src/archive/identity.js';
import { parseConfig } from '../../src/config/index.js';
import { silentLogger } from '../../src/log.js';
import { parseScenario } from '../../src/sim/scenario.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { openStore } from '../../src/store/index.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { fileRows } from '../helpers/sqlite.js';
import { runCommand } from '../helpers/cli.js';
import { startSlackReceiver, type SlackReceiver } from '../helpers/slack-receiver.js';
import { slackTexts } from './harness.js';
import { until } from '../helpers/wait.js';

const M = 60_000;
const PHONE = '+14155550123';

interface CallsRig {
  clock: FakeClock;
  sim: RunningSimulator;
  slack: SlackReceiver;
  app: App;
  dbPath: string;
  archiveDir: string;
  /** Another daemon on the same database and simulator, its configuration with `extra` YAML added (not started). */
  daemon(extra: string): App;
  minutes(n: number): Promise<void>;
  close(): Promise<void>;
}

let rig: CallsRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

/**
 * acme's BX-00002 fails every call for the first 25 minutes; globex's boxes (same serials) never do.
 * `archiveIsFile`: the archive directory's path is a regular file (every write fails: ENOTDIR).
 */
async function startCallsRig(opts: { archiveIsFile?: boolean } = {}): Promise<CallsRig> {
  const clock = new FakeClock('2026-03-01T12:00:00Z');
  const traffic = 'calls: { per_box_per_hour: 30 }\ntimeline:\n  - { at: 0s, box: "BX-*", connect: true }\n  - { at: 0s, calls_fail: { box: "BX-*", rate: 0 } }\n';
  const sim = await startSimulator({
    port: 0,
    key: 'KEY',
    devices: 3,
    seed: 11,
    clock,
    historyCalls: 0,
    sharedSerials: true,
    accounts: [
      { scenario: parseScenario(`${traffic}  - { at: 1s, calls_fail: { box: BX-00002, rate: 1, for: 25m } }\n`, 'acme') },
      { scenario: parseScenario(traffic, 'globex') },
    ],
  });
  const slack = await startSlackReceiver();
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-accounts-calls-'));
  const dbPath = join(dir, 'boxwatch.db');
  const archiveDir = join(dir, 'recordings');
  if (opts.archiveIsFile) writeFileSync(archiveDir, 'not a directory\n');
  const text = `
gateways:
  - { name: acme, base_url: "${sim.url}", secret_key: "\${ACME_KEY}" }
  - { name: globex, base_url: "${sim.url}", secret_key: "\${GLOBEX_KEY}" }
poll: { schedule: "0 0 1 1 *" }
storage: { path: "${dbPath}" }
rules:
  - { name: call-failures, kind: call_failure_rate, window: 10, min_calls: 5, above: 50, clear_below: 20, severity: warning }
  - { name: disk, kind: archive_failing, severity: critical }
alerting: { group_wait: 0s }
calls: { per_page: 100, schedule: "0 0 1 1 *" }
archive: { dir: "${archiveDir}" }
test_calls:
  - { name: path-check, boxes: [BX-00001, BX-00002], to: "${PHONE}", agent: 101, schedule: "0 0 9 * * *", daily_cap: { per_box: 2, total: 8 }, timeout: 10m, severity: warning }
notifiers:
  - { name: ops-slack, type: slack, webhook_url: "${slack.url}" }
http: false
`;
  const daemon = (extra: string): App =>
    createApp({ config: parseConfig(`${text}${extra}`, { ACME_KEY: 'KEY-1', GLOBEX_KEY: 'KEY-2' }, 'accounts calls rig'), logger: silentLogger, clock, store: openStore(dbPath, { clock }) });
  const app = daemon('');
  await app.runOnce(); // both fleets are known
  const calls: CallsRig = {
    clock,
    sim,
    slack,
    app,
    dbPath,
    archiveDir,
    daemon,
    async minutes(n) {
      for (let i = 0; i < n; i++) {
        clock.advance(M);
        await app.runCallsOnce(); // every account in turn
        await app.runArchiveOnce();
        await app.runOnce();
        await app.deliverNow();
      }
    },
    async close() {
      await app.stop();
      await calls.app.stop();
      await sim.close();
      await slack.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return calls;
}

function dbRows<T>(r: CallsRig, sql: string, ...params: unknown[]): T[] {
  return fileRows<T>(r.dbPath, sql, ...params);
}

function slackWith(r: CallsRig, ...texts: string[]): string[] {
  return r.slack.received.map((m) => slackTexts(m.body).join('\n')).filter((t) => texts.every((x) => t.includes(x)));
}

/** The calls an account's call book holds from `box:SERIAL` to the test number. */
function simTestCalls(r: CallsRig, account: number, serial: string): number {
  const book = (r.sim.accounts[account - 1] as RunningSimulator['accounts'][number]).sim.calls;
  let n = 0;
  for (let page = 1; ; page++) {
    const { items, hasNext } = book.page(100, page);
    n += items.filter((c) => c.to === PHONE && c.from === `box:${serial}`).length;
    if (!hasNext) return n;
  }
}

describe('calls of several accounts with the same serials', () => {
  it("each account's calls are read through its own gateway and kept apart; failing calls of one account's box alert on that box only", async () => {
    const r = (rig = await startCallsRig());
    await r.minutes(20);

    // Both accounts' calls are stored, under their own box ids and call keys, even where the
    // gateways gave the same call id (both call books count from the same first id).
    const byAccount = dbRows<{ account: string; n: number; bad: number }>(
      r,
      "SELECT account, count(*) AS n, sum(CASE WHEN serial LIKE account || '/BX-%' AND call_id LIKE account || '/%' THEN 0 ELSE 1 END) AS bad FROM calls GROUP BY account ORDER BY account",
    );
    expect(byAccount.map((a) => [a.account, a.bad])).toEqual([
      ['acme', 0],
      ['globex', 0],
    ]);
    for (const a of byAccount) expect(a.n).toBeGreaterThan(10);
    const firstIds = dbRows<{ call_id: string }>(r, "SELECT call_id FROM calls WHERE call_id IN ('acme/100001', 'globex/100001') ORDER BY call_id").map((c) => c.call_id);
    expect(firstIds).toEqual(['acme/100001', 'globex/100001']);
    // calls stats --by agent: the same agent ids of two accounts are two rows, with an ACCOUNT column.
    const since = `${Math.ceil((Date.now() - Date.parse('2026-03-01T00:00:00Z')) / 86_400_000) + 1}d`; // the rig's calls, whenever this runs
    const stats = await runCommand(['calls', 'stats', '--db', r.dbPath, '--by', 'agent', '--since', since, '--format', 'json']);
    expect(stats.code).toBe(0);
    const rows = (JSON.parse(stats.out) as { rows: { account: string; agent: number; placed: number }[] }).rows;
    for (const a of byAccount) expect(rows.filter((x) => x.account === a.account).reduce((n, x) => n + x.placed, 0)).toBe(a.n);
    const agent = rows.find((x) => x.account === 'acme')?.agent;
    expect(rows.filter((x) => x.agent === agent).map((x) => x.account)).toEqual(['acme', 'globex']);
    const table = (await runCommand(['calls', 'stats', '--db', r.dbPath, '--by', 'agent', '--since', since])).out.split('\n');
    expect(table[0]).toMatch(/^ACCOUNT\s+AGENT\s+PLACED\s/);
    expect(table.filter((l) => new RegExp(`^(acme|globex)\\s+${agent}\\s`).test(l))).toHaveLength(2);

    // Each account reads its own call list: its own reading position.
    expect(dbRows<{ account: string }>(r, 'SELECT account FROM call_sync ORDER BY account').map((s) => s.account)).toEqual(['acme', 'globex']);
    // ... and its own call-sync series: one account's failing sync shows apart from the other's.
    const metrics = await r.app.metrics.text();
    for (const account of ['acme', 'globex']) expect(metrics).toContain(`boxwatch_call_sync_cycles_total{account="${account}",outcome="ok"} 20`);
    // Two accounts' syncs at the same moment: each returns (and offers the archive) its own result.
    r.clock.advance(M);
    const [acme, globex] = await Promise.all([r.app.runCallsOnce('acme'), r.app.runCallsOnce('globex')]);
    expect(acme?.recordings.length).toBeGreaterThan(0);
    expect(acme?.recordings.every((c) => c.callId.startsWith('acme/'))).toBe(true);
    expect(globex?.recordings.length).toBeGreaterThan(0);
    expect(globex?.recordings.every((c) => c.callId.startsWith('globex/'))).toBe(true);

    // The failure-rate alert fires for acme's BX-00002 only: not for globex's box of the same serial.
    const states = await r.app.alerts.states();
    const callAlerts = [...states.values()].filter((s) => s.rule === 'call-failures');
    expect(callAlerts.map((s) => [s.serial, s.status])).toEqual([['acme/BX-00002', 'firing']]);
    const told = slackWith(r, 'calls failed');
    expect(told).toHaveLength(1);
    expect(told[0]).toContain('acme/BX-00002');
    expect(told[0]).not.toContain('globex');

    // status's CALLS FAILED column reads the same keys: acme/BX-00002's calls, not globex's.
    const failures = await r.app.store.calls.failureCounts({ since: 0 });
    expect(failures.get('acme/BX-00002')?.failed).toBe(failures.get('acme/BX-00002')?.calls);
    expect(failures.get('globex/BX-00002')?.failed).toBe(0);
    expect(failures.has('BX-00002')).toBe(false);

    // Calls recover after 25 minutes: the alert resolves in acme's own cycles.
    await r.minutes(30);
    expect((await r.app.alerts.states()).get('call-failures\u0000acme/BX-00002')?.status ?? 'inactive').toBe('inactive');
    expect(slackWith(r, 'acme/BX-00002', 'RESOLVED')).not.toHaveLength(0);
  }, 120_000);

  it("a test call is placed through each box's own account, and a failed one alerts on that account's box and resolves in its cycle", async () => {
    const r = (rig = await startCallsRig());
    await r.minutes(1);
    const attempts = await r.app.runTestCallsOnce();
    expect(attempts.map((a) => [a.serial, a.outcome]).sort()).toEqual([
      ['acme/BX-00001', 'placed'],
      ['acme/BX-00002', 'placed'],
      ['globex/BX-00001', 'placed'],
      ['globex/BX-00002', 'placed'],
    ]);
    // Each went to the account's own gateway, from the gateway's serial.
    expect([simTestCalls(r, 1, 'BX-00001'), simTestCalls(r, 1, 'BX-00002'), simTestCalls(r, 2, 'BX-00001'), simTestCalls(r, 2, 'BX-00002')]).toEqual([1, 1, 1, 1]);
    const rows = dbRows<{ serial: string; call_id: string }>(r, "SELECT serial, call_id FROM test_calls WHERE state = 'placed' ORDER BY serial");
    expect(rows.map((t) => [t.serial, t.call_id.split('/')[0]])).toEqual([
      ['acme/BX-00001', 'acme'],
      ['acme/BX-00002', 'acme'],
      ['globex/BX-00001', 'globex'],
      ['globex/BX-00002', 'globex'],
    ]);

    // acme's BX-00002 fails its calls: its test call fails; the same serial at globex completes.
    await r.minutes(15);
    const failed = [...(await r.app.alerts.states()).values()].filter((s) => s.rule === 'test_call_failed');
    expect(failed.map((s) => [s.serial, s.status])).toEqual([['acme/BX-00002', 'firing']]);
    expect(slackWith(r, 'test call', 'acme/BX-00002')).toHaveLength(1);

    // After the failures end, the next test call completes and acme's cycle resolves the alert.
    await r.minutes(15);
    const again = await r.app.runTestCallsOnce();
    expect(again.find((a) => a.serial === 'acme/BX-00002')?.outcome).toBe('placed');
    await r.minutes(15);
    expect((await r.app.alerts.states()).get('test_call_failed\u0000acme/BX-00002')?.status ?? 'inactive').toBe('inactive');
    expect(slackWith(r, 'test call', 'acme/BX-00002', 'RESOLVED')).not.toHaveLength(0);
  }, 120_000);

  it("each account's recordings are archived under its own directory, two calls of the same gateway id in two files", async () => {
    const r = (rig = await startCallsRig());
    await r.minutes(20);
    const top = readdirSync(r.archiveDir).filter((n) => n !== ARCHIVE_MARKER).sort(); // beside the archive's id (src/archive/identity.ts)
    expect(top).toEqual(['acme', 'globex']); // nothing of an account at the top (that is the default account's place)
    const archived = dbRows<{ call_id: string; path: string }>(r, 'SELECT call_id, path FROM recordings WHERE archived_at IS NOT NULL');
    for (const account of ['acme', 'globex']) {
      const mine = archived.filter((a) => a.call_id.startsWith(`${account}/`));
      expect(mine.length).toBeGreaterThan(0);
      for (const a of mine) {
        expect(a.path.startsWith(`${account}/2026/03/01/`)).toBe(true);
        expect(readdirSync(join(r.archiveDir, a.path, '..'))).toContain(a.path.split('/').pop());
      }
    }
    expect(archived.length).toBe(archived.filter((a) => /^(acme|globex)\//.test(a.call_id)).length);
    // The same gateway call id in both accounts: two recordings, two files.
    const same = archived.filter((a) => a.call_id.endsWith('/100001')).map((a) => a.path).sort();
    expect(same).toHaveLength(2);
    expect(same[0]).not.toBe(same[1]);
  }, 120_000);

  it('a replica syncs calls, places test calls and archives recordings only for the account it leads', async () => {
    const r = (rig = await startCallsRig()); // both fleets known, polled by a daemon without cluster:
    r.clock.advance(20 * M); // both accounts place calls meanwhile
    await r.app.stop();
    // Another replica leads globex (its lease runs for a minute; nothing here advances the clock).
    const other = openStore(r.dbPath, { clock: r.clock });
    other.leases.heartbeat({ id: 'other', host: 'elsewhere', pid: 1 }, r.clock.now());
    expect(other.leases.acquire('globex', 'other', r.clock.now(), 60_000)?.holder).toBe('other');
    other.close();
    const app = r.daemon('cluster: { lease: 3s, replica_id: here }\n');
    r.app = app;
    await app.start();
    await until('this replica leads acme', () => app.replica?.holds('acme') ?? false);
    expect([app.replica?.holds('acme'), app.replica?.holds('globex')]).toEqual([true, false]);

    await app.runCallsOnce();
    await app.runArchiveOnce();
    const attempts = await app.runTestCallsOnce();
    expect(dbRows<{ account: string }>(r, 'SELECT DISTINCT account FROM calls').map((c) => c.account)).toEqual(['acme']);
    expect(dbRows<{ account: string }>(r, 'SELECT account FROM call_sync').map((c) => c.account)).toEqual(['acme']);
    expect(attempts.map((a) => a.serial).sort()).toEqual(['acme/BX-00001', 'acme/BX-00002']);
    expect([simTestCalls(r, 2, 'BX-00001'), simTestCalls(r, 2, 'BX-00002')]).toEqual([0, 0]);
    expect(dbRows<{ n: number }>(r, "SELECT count(*) AS n FROM recordings WHERE archived_at IS NOT NULL AND call_id LIKE 'acme/%'")[0]?.n).toBeGreaterThan(0);
    expect(dbRows<{ call_id: string }>(r, "SELECT call_id FROM recordings WHERE call_id NOT LIKE 'acme/%'")).toEqual([]);
  }, 60_000);

  it('one archive that cannot write its files is one alert and one notification, not one per account', async () => {
    const r = (rig = await startCallsRig({ archiveIsFile: true }));
    await r.minutes(10);
    const disk = [...(await r.app.alerts.states()).values()].filter((s) => s.rule === 'disk');
    // Judged in the cycle of the first account this process works for, under its fleet key.
    expect(disk.map((s) => [s.serial, s.status])).toEqual([['acme/', 'firing']]);
    const told = slackWith(r, 'recording archive cannot write its files');
    expect(told).toHaveLength(1);
    expect(told[0]).toContain('ENOTDIR');
    expect(dbRows<{ serial: string }>(r, "SELECT DISTINCT serial FROM alert_transitions WHERE rule = 'disk'")).toEqual([{ serial: 'acme/' }]);
  }, 120_000);
});
