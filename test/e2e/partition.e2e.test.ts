/**
 * A partition with real processes on PostgreSQL: two `boxwatch run` replicas (`cluster:`, 3 s
 * leases) of two simulated accounts share a throwaway PostgreSQL server; replica-a reaches it
 * through a test TCP proxy (test/helpers/tcp-proxy.ts), replica-b directly. Boxes of both accounts
 * flap. With nothing in flight, the proxy drops replica-a's connections (packets vanish: its
 * queries hang). replica-a must stop its account before its lease expires, replica-b take the
 * account over after it, and every notified transition be delivered exactly once (a webhook
 * receiver counts items, a Slack receiver messages): no double delivery. The step-down and
 * takeover times are printed.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DaemonProcesses } from '../helpers/daemon-process.js';
import { describeWithPostgres, freePort, pgRows, PostgresServer } from '../helpers/postgres.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { countByBoxAndStatus, Flapping, replicaKeyVar, startReplicaRig, webhookAlertCounts, writeReplicaConfig, type ReplicaRig } from '../helpers/replica-config.js';
import { ensureBuilt } from './build.js';
import { until as waitUntil } from '../helpers/wait.js';

const ACCOUNTS = ['acme', 'globex'];
const KEYS = Object.fromEntries(ACCOUNTS.map((a) => [replicaKeyVar(a), `${a}-secret-key`]));

describeWithPostgres('a partition between the leading replica and PostgreSQL', () => {
  let server: PostgresServer;
  let proxy: TcpProxy;
  let rig: ReplicaRig;
  let url: string;
  const daemons: DaemonProcesses[] = [];

  beforeAll(async () => {
    await ensureBuilt();
    server = await PostgresServer.start();
    url = await server.createDatabase('partition');
    proxy = await startTcpProxy({ host: '127.0.0.1', port: server.port });
    rig = await startReplicaRig({ accounts: ACCOUNTS, devices: 3, seed: 21, prefix: 'boxwatch-partition-' });
  }, 120_000);

  afterAll(async () => {
    for (const d of daemons) d.killAll();
    await proxy?.close();
    await rig?.close();
    server?.stop();
  });

  function writeConfig(name: string, port: number): string {
    return writeReplicaConfig({ dir: rig.dir, name, port, accounts: rig.sims, storage: '{ url: "${BOXWATCH_DATABASE_URL}" }', slackUrl: rig.slack.url, hookUrl: rig.hook.url });
  }

  const rows = <R>(sql: string): Promise<R[]> => pgRows<R>(url, sql);

  async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<number> {
    await waitUntil(what, check, { timeoutMs, everyMs: 100, detail: () => daemons.map((d) => d.output.join('').slice(-2000)).join('\n') });
    return Date.now();
  }

  const leases = async () => new Map((await rows<{ account: string; holder: string | null; token: string; expires_at: string }>('SELECT * FROM leases')).map((l) => [l.account, l]));
  const leading = async (replica: string) => [...(await leases())].filter(([, l]) => l.holder === replica).map(([a]) => a);
  const quiet = async () => Number((await rows<{ n: string }>("SELECT (SELECT count(*) FROM outbox WHERE status IN ('pending', 'sending')) + (SELECT count(*) FROM notification_queue) AS n"))[0]?.n ?? 1) === 0;

  it('the cut leader steps down before its lease expires, the other takes its account over, nothing is delivered twice', async () => {
    const { sims, slack, hook } = rig;
    const proxied = url.replace(`:${server.port}/`, `:${proxy.port}/`);
    const a = new DaemonProcesses({ ...KEYS, BOXWATCH_DATABASE_URL: proxied });
    const b = new DaemonProcesses({ ...KEYS, BOXWATCH_DATABASE_URL: url });
    daemons.push(a, b);
    const replicaA = a.spawn(writeConfig('replica-a', await freePort()));
    await until('replica-a leads both accounts', async () => (await leading('replica-a')).length === 2, 90_000);
    const replicaB = b.spawn(writeConfig('replica-b', await freePort()));
    await until('the accounts are shared 1, 1', async () => (await leading('replica-a')).length === 1 && (await leading('replica-b')).length === 1);

    // Boxes of both accounts flap, one change every 500 ms.
    const flapping = new Flapping(ACCOUNTS.flatMap((acc) => sims.get(acc)!.sim.fleet.boxes.slice(0, 2).map((box) => ({ sim: sims.get(acc)!, box }))));
    flapping.start();
    await until('transitions of both accounts delivered', async () => flapping.count >= 8 && hook.received.length >= 4);

    // Nothing in flight, then the cut.
    await flapping.stop();
    await until('nothing waiting to be delivered', quiet);
    const [cutAccount] = await leading('replica-a');
    const cutAt = Date.now();
    proxy.cut('blackhole');
    const lease = (await leases()).get(cutAccount as string)!; // replica-a's last renewal: it renews no more
    const deliveredByCut = hook.requests.length;
    flapping.start();

    const takeoverAt = await until(`replica-b leads ${cutAccount}`, async () => (await leases()).get(cutAccount as string)?.holder === 'replica-b');
    expect(Number((await leases()).get(cutAccount as string)!.token)).toBeGreaterThan(Number(lease.token));
    expect(takeoverAt).toBeGreaterThanOrEqual(Number(lease.expires_at));
    const stepDown = a.output.join('').split('\n').find((l) => l.includes('lease not renewed in time'));
    expect(stepDown, 'replica-a says it stopped its account').toBeDefined();
    const stepDownAt = (JSON.parse(stepDown as string) as { time: number }).time;
    await until('more flaps under replica-b', async () => flapping.count >= 16);
    await flapping.settle();

    const notified = async (): Promise<Map<string, number>> =>
      countByBoxAndStatus(await rows<{ serial: string; status: string }>("SELECT serial, to_status AS status FROM alert_transitions WHERE held_back IS NULL AND to_status IN ('firing', 'resolved')"));
    const hooked = (): Map<string, number> => webhookAlertCounts(hook.requests);
    await until('every box resolved, nothing waiting, every transition delivered', async () => {
      const firing = Number((await rows<{ n: string }>("SELECT count(*) AS n FROM alert_states WHERE status = 'firing'"))[0]?.n ?? 1);
      const got = hooked();
      return firing === 0 && (await quiet()) && [...(await notified())].every(([key, n]) => (got.get(key) ?? 0) >= n);
    }, 90_000);
    // Both stopped (replica-a's database calls hang for ever: no clean stop to wait for; replica-b
    // finishes what it has in flight): no copy can arrive after this.
    replicaA.kill('SIGKILL');
    replicaB.kill('SIGTERM');
    expect(await b.exited(replicaB)).toEqual({ code: 0, signal: null });

    // Exactly once: nothing was in flight at the cut, and the cut replica sent nothing after it.
    const expected = await notified();
    const got = hooked();
    for (const [key, n] of expected) expect(got.get(key) ?? 0, key).toBe(n);
    for (const key of got.keys()) expect(expected.has(key), `${key} was never a transition`).toBe(true);
    const slackRows = Number((await rows<{ n: string }>("SELECT count(*) AS n FROM outbox WHERE notifier = 'ops-slack' AND status = 'delivered'"))[0]?.n);
    expect(slack.requests.length).toBe(slackRows);
    expect(hook.requests.length).toBeGreaterThan(deliveredByCut);
    console.log(
      `partition (2 replicas, 2 accounts, 3 s lease, PostgreSQL): replica-a stopped ${cutAccount} ${stepDownAt - cutAt} ms after the cut ` +
        `(${Number(lease.expires_at) - stepDownAt} ms before its lease expired); replica-b led it ${takeoverAt - cutAt} ms after the cut; ` +
        `${[...expected.values()].reduce((x, y) => x + y, 0)} transitions notified, each delivered once`,
    );
  }, 300_000);
});
