/**
 * Failover with real processes, on each store replicas share: one SQLite file (processes of one
 * machine) and a throwaway PostgreSQL server (the issue's target). Three `boxwatch run` replicas
 * (`cluster:`, 3 s leases) of four accounts (a simulator each, real clock, a cycle every second),
 * a real Slack receiver and a webhook receiver. Boxes of every account flap while the replica that
 * leads `acme` is killed with SIGKILL; the two others take its accounts over (2 and 2).
 * Every notified transition (FIRING, RESOLVED) stored in the database is delivered exactly once,
 * except a message in flight at the kill, which may arrive twice (at most one message per channel,
 * however many alerts it holds): counted per item on a webhook receiver (structured alerts; a
 * message sent again repeats its body), per message on the Slack receiver (each outbox message
 * delivered once).
 * The takeover time (kill to the new leases, and to the next message) is printed. `/healthz` of
 * each replica says which accounts it leads, `/metrics` has boxwatch_lease_held, `boxwatch status`
 * who serves each account.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBuilt } from '../helpers/cli-process.js';
import { findPostgres, freePort, pgRows, PostgresServer } from '../helpers/postgres.js';
import { countByBoxAndStatus, Flapping, sqliteRows, startReplicaRig, webhookAlertCounts, writeReplicaConfig, type ReplicaRig, expectEachDeliveredOnce } from '../helpers/replica-config.js';
import { ensureBuilt } from './build.js';
import { until } from '../helpers/wait.js';

const ACCOUNTS = ['acme', 'globex', 'initech', 'umbrella'];

/** The database the replicas share: its `storage:` section, the environment it needs, and a way to read it. */
interface SharedStore {
  storage: string;
  env: Record<string, string>;
  rows<T>(sql: string): Promise<T[]>;
  close(): void;
}

const STORES: { name: string; missing?: string; open(dir: string): Promise<SharedStore> }[] = [
  {
    name: 'one SQLite file',
    open: (dir) => {
      // Not created here: the three replicas create and migrate it themselves, at once.
      const path = join(dir, 'boxwatch.db');
      return Promise.resolve({ storage: `{ path: "${path}" }`, env: {}, rows: <T>(sql: string) => Promise.resolve(sqliteRows<T>(path, sql)), close: () => undefined });
    },
  },
  {
    name: 'PostgreSQL',
    ...(findPostgres() === undefined && { missing: 'PostgreSQL is not installed; apt-get install postgresql' }),
    open: async () => {
      const server = await PostgresServer.start();
      const url = await server.createDatabase('failover');
      return { storage: '{ url: "${BOXWATCH_DATABASE_URL}" }', env: { BOXWATCH_DATABASE_URL: url }, rows: <T>(sql: string) => pgRows<T>(url, sql), close: () => server.stop() };
    },
  },
];

for (const kind of STORES) {
  describe.skipIf(kind.missing !== undefined)(`failover between three replicas of four accounts, on ${kind.name}${kind.missing === undefined ? '' : ` (skipped: ${kind.missing})`}`, () => {
    let rig: ReplicaRig;
    let store: SharedStore;

    beforeAll(async () => {
      await ensureBuilt();
      rig = await startReplicaRig({
        accounts: ACCOUNTS,
        devices: 3,
        seed: 5,
        prefix: 'boxwatch-failover-',
        env: async (dir) => {
          store = await kind.open(dir);
          return store.env;
        },
      });
    }, 120_000);

    afterAll(async () => {
      await rig?.close();
      store?.close();
    });

    function writeConfig(name: string, port: number): string {
      return writeReplicaConfig({ dir: rig.dir, name, port, accounts: rig.sims, storage: store.storage, slackUrl: rig.slack.url, hookUrl: rig.hook.url });
    }
    /** A count of `sql` (`SELECT COUNT(*) AS n ...`); `none` while the tables are not there yet. */
    const count = async (sql: string, none = 1): Promise<number> => Number((await store.rows<{ n: number | string }>(sql))[0]?.n ?? none);

    /** Each account's lease holder and token. */
    const leases = async (): Promise<Map<string, { holder: string | null; token: number }>> =>
      new Map((await store.rows<{ account: string; holder: string | null; token: number | string }>('SELECT account, holder, token FROM leases')).map((l) => [l.account, { holder: l.holder, token: Number(l.token) }]));

    /** The JSON of `url`, retried while the server is not listening yet. */
    const getJson = (url: string): Promise<Record<string, unknown>> =>
      until(`an answer from ${url}`, async () => (await (await fetch(url)).json()) as Record<string, unknown>, { everyMs: 100 });

    it('the leader of an account is killed while boxes flap: its accounts are taken over, every transition is delivered once (a send in flight at most twice)', async () => {
      const { daemons, sims, slack, hook, dir } = rig;
      const names = ['replica-a', 'replica-b', 'replica-c'];
      const ports = new Map<string, number>();
      for (const n of names) ports.set(n, await freePort());
      const children = new Map(names.map((n) => [n, daemons.spawn(writeConfig(n, ports.get(n)!))]));
      const leading = async (replica: string): Promise<string[]> => [...(await leases())].filter(([, l]) => l.holder === replica).map(([a]) => a).sort();
      /** How many accounts each of `replicas` leads, smallest first. */
      const shares = async (replicas: string[]): Promise<string> => (await Promise.all(replicas.map(async (n) => (await leading(n)).length))).sort().join();
      // The fair share: at most ceil(4 / 3) each; which replica leads two depends on who started first (src/cluster/coordinator.ts).
      await daemons.until('the accounts are shared 1, 1, 2', async () => (await shares(names)) === '1,1,2', 90_000).catch(async (err: unknown) => {
        throw new Error(`${JSON.stringify([...(await leases())])} ${JSON.stringify(await store.rows('SELECT * FROM replicas'))} ${String(err)}\n${daemons.output.join('').split('\n').filter((l) => /replica|error|warn/i.test(l)).slice(-40).join('\n')}`);
      });

      // Each replica says what it leads, in /healthz and /metrics, as the lease rows do. Read at nearly
      // the same moment, so read again while a renewal late on a loaded machine makes them differ.
      const saysWhatItLeads = async (n: string): Promise<boolean> => {
        const leads = await leading(n);
        const health = await getJson(`http://127.0.0.1:${ports.get(n)}/healthz`);
        const metrics = await (await fetch(`http://127.0.0.1:${ports.get(n)}/metrics`)).text();
        return (
          JSON.stringify(health.replica) === JSON.stringify({ id: n, leads }) &&
          ACCOUNTS.every((a) => metrics.includes(`boxwatch_lease_held{account="${a}"} ${leads.includes(a) ? 1 : 0}`))
        );
      };
      for (const n of names) await daemons.until(`${n}'s /healthz and /metrics name the accounts it leads`, () => saysWhatItLeads(n), 30_000);
      let victim = (await leases()).get('acme')!.holder as string;
      let victimAccounts = await leading(victim);

      // Boxes flap: one change every 500 ms, round robin over two boxes of each account.
      const flappers = ACCOUNTS.flatMap((a) => sims.get(a)!.sim.fleet.boxes.slice(0, 2).map((box) => ({ sim: sims.get(a)!, box })));
      // One of acme's flapping boxes is silenced: no silence is lost across the failover.
      const silenced = `acme/${flappers[0]!.box.serial}`;
      const silence = await runBuilt(['silence', 'add', '--box', silenced, '--for', '1h', '--comment', 'failover test', '--config', join(dir, 'replica-a.yaml')], { env: store.env });
      expect(silence.code, silence.err).toBe(0);
      const flapping = new Flapping(flappers);
      flapping.start();

      await daemons.until('transitions of every account delivered', () => flapping.count >= flappers.length + 2 && hook.received.length >= 6, 60_000);
      const before = await leases();
      expect(before.get('acme')?.holder).toBe(victim); // the shares are stable
      victim = before.get('acme')!.holder as string;
      victimAccounts = await leading(victim);
      const requestsAtKill = hook.requests.length;
      const killedAt = Date.now();
      children.get(victim)!.kill('SIGKILL');
      expect(await daemons.exited(children.get(victim)!)).toEqual({ code: null, signal: 'SIGKILL' });

      // Both measured from the kill, side by side: the new leases, and the first alert of the killed replica's accounts sent after the kill.
      const timeOf = async (what: string, check: () => boolean | Promise<boolean>): Promise<number> => {
        await daemons.until(what, check, 60_000);
        return Date.now();
      };
      const ofVictimAccounts = (r: { body: unknown }): boolean =>
        (r.body as { alerts: { labels: { serial?: string } }[] }).alerts.some((x) => victimAccounts.some((a) => String(x.labels.serial).startsWith(`${a}/`)));
      const [leaseTakenAt, firstMessageAt] = await Promise.all([
        timeOf(`the accounts of ${victim} are led by the others`, async () => {
          const now = await leases();
          return victimAccounts.every((a) => now.get(a)?.holder !== victim && now.get(a)?.holder != null && (now.get(a)?.token ?? 0) > before.get(a)!.token);
        }),
        timeOf(`an alert of ${victimAccounts.join(', ')} sent after the kill`, () => hook.requests.slice(requestsAtKill).some(ofVictimAccounts)),
      ]);
      const survivors = names.filter((n) => n !== victim);
      await daemons.until('the two survivors share the four accounts 2, 2', async () => (await shares(survivors)) === '2,2', 60_000);
      for (const n of survivors) await daemons.until(`${n}'s /healthz and /metrics name the accounts it leads`, () => saysWhatItLeads(n), 30_000);
      // `boxwatch status` says which replica serves each account.
      const status = await runBuilt(['status', '--config', join(dir, 'replica-a.yaml')], { env: store.env });
      expect(status.code).toBe(0);
      for (const account of ACCOUNTS) expect(status.out).toMatch(new RegExp(`^ {2}${account}: (${survivors.join('|')}) \\(host \\S+, pid \\d+, heartbeat [^)]+\\)$`, 'm'));

      const notified = async (): Promise<Map<string, number>> =>
        countByBoxAndStatus(await store.rows<{ serial: string; status: string }>("SELECT serial, to_status AS status FROM alert_transitions WHERE held_back IS NULL AND to_status IN ('firing', 'resolved')"));
      const perAccountOf = (m: ReadonlyMap<string, number>): number[] => ACCOUNTS.map((a) => [...m].filter(([k]) => k.startsWith(`${a}/`)).reduce((x, [, n]) => x + n, 0));
      // More flaps under the new leaders (until every account has notified transitions from
      // before and after the kill: on a loaded machine a short flap may pass unnoticed), then
      // every box back up and quiet.
      /** When the silenced box's firing transitions were held back. */
      const silencedHeld = async (): Promise<number[]> =>
        (await store.rows<{ at: number | string }>(`SELECT at FROM alert_transitions WHERE serial = '${silenced}' AND held_back IS NOT NULL AND to_status = 'firing'`)).map((t) => Number(t.at));
      const flapsAtTakeover = flapping.count;
      await daemons.until(
        'more flaps after the takeover, every account notified, the silenced box held back again',
        async () => flapping.count >= flapsAtTakeover + flappers.length && perAccountOf(await notified()).every((n) => n >= 4) && (await silencedHeld()).some((at) => at > killedAt),
        60_000,
      );
      await flapping.settle();

      /** Per box and status, the alerts the webhook receiver got (every request, answered or not). */
      const hooked = (): Map<string, number> => webhookAlertCounts(hook.requests);
      const slackRows = () => count("SELECT COUNT(*) AS n FROM outbox WHERE notifier = 'ops-slack' AND status = 'delivered'", 0);
      let last = {};
      await daemons.until('every box resolved, nothing waiting, every transition delivered', async () => {
        const firing = await count("SELECT COUNT(*) AS n FROM alert_states WHERE status = 'firing'");
        const waiting = await count("SELECT (SELECT COUNT(*) FROM outbox WHERE status IN ('pending', 'sending')) + (SELECT COUNT(*) FROM notification_queue) AS n");
        const got = hooked();
        const missing = [...(await notified())].filter(([key, n]) => (got.get(key) ?? 0) < n);
        last = { firing, waiting, missing };
        return firing === 0 && waiting === 0 && missing.length === 0;
      }, 90_000).catch((err: unknown) => {
        throw new Error(`${JSON.stringify(last)} ${String(err)}`);
      });
      // Stopped, they finish what they have in flight: no copy can arrive after this.
      for (const n of survivors) children.get(n)!.kill('SIGTERM');
      for (const n of survivors) expect(await daemons.exited(children.get(n)!)).toEqual({ code: 0, signal: null });

      // Every notified transition was delivered once; a send in flight at the kill at most twice.
      const expected = await notified();
      const got = hooked();
      const extra = expectEachDeliveredOnce(expected, hook.requests); // a whole message in flight at the kill may come twice
      // The silenced box flapped before and after the kill, held back each time, never sent.
      const held = await silencedHeld();
      expect(held.some((at) => at < killedAt) && held.some((at) => at > killedAt)).toBe(true);
      expect([...got.keys()].filter((k) => k.startsWith(`${silenced} `))).toEqual([]);
      // Slack: every message recorded as delivered reached it, at most one of them twice.
      const slackMessages = await slackRows();
      expect(slack.requests.length).toBeGreaterThanOrEqual(slackMessages);
      expect(slack.requests.length).toBeLessThanOrEqual(slackMessages + 1);
      const perAccount = perAccountOf(expected);
      expect(perAccount.every((n) => n >= 4)).toBe(true); // every account flapped, before and after the kill
      console.log(
        `failover on ${kind.name} (3 replicas, 4 accounts, 3 s lease, 1 s schedule): ${victim} (leading ${victimAccounts.join(', ')}) killed; ` +
          `its accounts were leased again ${leaseTakenAt - killedAt} ms after the kill, the first alert of those accounts arrived ${firstMessageAt - killedAt} ms after it; ` +
          `${[...expected.values()].reduce((x, y) => x + y, 0)} transitions notified (${perAccount.join('/')} per account), ${extra} re-sent; ` +
          `${slack.requests.length} Slack requests for ${slackMessages} messages`,
      );
    }, 300_000);
  });
}
