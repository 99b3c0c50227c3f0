/**
 * A replica frozen far longer than its lease, with real processes on PostgreSQL (the issue's
 * target): two `boxwatch run` replicas (`cluster:`, 3 s leases, a cycle every second) of two
 * simulated accounts share a throwaway PostgreSQL server, with a Slack and a webhook receiver.
 * While boxes flap, the leader of `acme` is stopped with SIGSTOP (a stopped VM, a process paused
 * by a debugger or the kernel) for five lease periods: the "frozen for a minute" with
 * 30 s leases is two; what matters is that the freeze outlasts the lease, and five is well past
 * it. Its sockets stay open, so the database sees nothing of the freeze, and any transaction it
 * had open keeps its locks until the server ends it (docs/storage.md, "PostgreSQL").
 *
 * - The other replica takes the frozen one's account over while it is still frozen; the time is
 *   printed against the bound (two poll intervals plus the lease), not asserted (no
 *   timing assertions on a loaded machine). Transitions of that account go on being delivered.
 * - Resumed with SIGCONT, the stale replica writes no cycle (none started before the freeze is
 *   stored late: a cycle in flight at the freeze is refused by its fence), delivers nothing more
 *   than the one send it may have been in the middle of, says it stopped the account, and rejoins:
 *   the balance gives it one account again, under a new token.
 * - Every notified transition is delivered once; a message in flight at the freeze at most twice.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeWithPostgres, pgRows, PostgresServer } from '../helpers/postgres.js';
import { countByBoxAndStatus, Flapping, startReplicaRig, webhookAlertCounts, expectEachDeliveredOnce, type ReplicaRig } from '../helpers/replica-config.js';
import { ensureBuilt } from './build.js';

const ACCOUNTS = ['acme', 'globex'];
const NAMES = ['replica-a', 'replica-b'];
const LEASE_MS = 3_000; // writeReplicaConfig's
const POLL_MS = 1_000;
const FREEZE_MS = 5 * LEASE_MS;

describeWithPostgres('a replica frozen for five lease periods (SIGSTOP), then resumed', () => {
  let server: PostgresServer;
  let url: string;
  let rig: ReplicaRig;

  beforeAll(async () => {
    await ensureBuilt();
    server = await PostgresServer.start();
    url = await server.createDatabase('frozen');
    rig = await startReplicaRig({ accounts: ACCOUNTS, devices: 3, seed: 31, prefix: 'boxwatch-frozen-', env: () => ({ BOXWATCH_DATABASE_URL: url }) });
  }, 120_000);

  afterAll(async () => {
    await rig?.close();
    server?.stop();
  });

  const rows = <R>(sql: string): Promise<R[]> => pgRows<R>(url, sql);
  const count = async (sql: string): Promise<number> => Number((await rows<{ n: string }>(sql))[0]?.n ?? -1);
  const leases = async () => new Map((await rows<{ account: string; holder: string | null; token: string }>('SELECT account, holder, token FROM leases')).map((l) => [l.account, { holder: l.holder, token: Number(l.token) }]));
  const leading = async (replica: string): Promise<string[]> => [...(await leases())].filter(([, l]) => l.holder === replica).map(([a]) => a);
  const notified = async (): Promise<Map<string, number>> =>
    countByBoxAndStatus(await rows<{ serial: string; status: string }>("SELECT serial, to_status AS status FROM alert_transitions WHERE held_back IS NULL AND to_status IN ('firing', 'resolved')"));
  /** No alert firing, nothing waiting, and every notified transition at the webhook receiver. */
  const allDelivered = async (): Promise<boolean> => {
    const waiting = await count("SELECT (SELECT count(*) FROM outbox WHERE status IN ('pending', 'sending')) + (SELECT count(*) FROM notification_queue) AS n");
    const firing = await count("SELECT count(*) AS n FROM alert_states WHERE status = 'firing'");
    const got = webhookAlertCounts(rig.hook.requests);
    return waiting === 0 && firing === 0 && [...(await notified())].every(([key, n]) => (got.get(key) ?? 0) >= n);
  };

  it('another replica takes its account over while it is frozen; resumed, it writes and sends nothing stale, steps down and rejoins; nothing is delivered twice', async () => {
    const children = new Map<string, ReturnType<ReplicaRig['daemons']['spawn']>>();
    for (const n of NAMES) {
      children.set(n, rig.daemons.spawn(await rig.config(n, '{ url: "${BOXWATCH_DATABASE_URL}" }')));
    }
    await rig.daemons.until('one account each', async () => (await leading('replica-a')).length === 1 && (await leading('replica-b')).length === 1, 90_000);

    const flapping = new Flapping(ACCOUNTS.flatMap((a) => rig.sims.get(a)!.sim.fleet.boxes.slice(0, 2).map((box) => ({ sim: rig.sims.get(a)!, box }))));
    flapping.start();
    await rig.daemons.until('transitions of both accounts delivered', () => flapping.count >= 6 && rig.hook.received.length >= 4, 60_000);

    const before = await leases();
    const victim = before.get('acme')!.holder as string;
    const other = NAMES.find((n) => n !== victim)!;
    const outputAtFreeze = rig.daemons.output.length;
    const stoppedAt = Date.now();
    children.get(victim)!.kill('SIGSTOP');

    // Taken over while still frozen (the freeze goes on below); the frozen one's account keeps being served.
    await rig.daemons.until(`${other} leads acme`, async () => {
      const l = (await leases()).get('acme');
      return l?.holder === other && l.token > before.get('acme')!.token;
    }, 60_000);
    const takenAt = Date.now();
    const flapsAtTakeover = flapping.count;
    const acmeItems = (): number => [...webhookAlertCounts(rig.hook.requests)].filter(([key]) => key.startsWith('acme/')).reduce((x, [, n]) => x + n, 0);
    const acmeAtTakeover = acmeItems();
    await rig.daemons.until('more of acme’s transitions delivered, by the new leader', () => flapping.count >= flapsAtTakeover + 4 && acmeItems() > acmeAtTakeover, 60_000);

    // Everything quiet and delivered, still frozen; then the rest of the freeze.
    await flapping.settle();
    await rig.daemons.until('every box resolved, nothing waiting, every transition delivered', allDelivered, 90_000);
    const staleCycles = `SELECT count(*) AS n FROM cycles WHERE started_at < ${stoppedAt}`;
    const cyclesBeforeFreeze = await count(staleCycles);
    await new Promise((r) => setTimeout(r, Math.max(0, stoppedAt + FREEZE_MS - Date.now()))); // the freeze's length is the scenario, not a wait for something
    expect((await leases()).get('acme')?.holder).toBe(other); // still the other's at the end of the freeze
    const requestsAtResume = rig.hook.requests.length;
    const slackAtResume = rig.slack.requests.length;
    const resumedAt = Date.now();
    children.get(victim)!.kill('SIGCONT');

    // It stops the account it had (its deadline is long past, or its fenced writes are refused) and rejoins the balance.
    await rig.daemons.until(`${victim} leads one account again`, async () => (await leading(victim)).length === 1 && (await leading(other)).length === 1, 60_000);
    const after = await leases();
    for (const a of ACCOUNTS) expect(after.get(a)!.token, a).toBeGreaterThan(before.get(a)!.token); // every account changed hands at least once
    const victimLog = rig.daemons.output.slice(outputAtFreeze).join('').split('\n').filter((l) => l.includes(`"pid":${children.get(victim)!.pid}`));
    expect(victimLog.some((l) => /lease not renewed in time|a write was refused|poll cycle not stored|lease lost/.test(l)), 'the resumed replica says it stopped its account').toBe(true);
    // Two of its own cycles after it rejoined: a stale write or send of before the freeze would have come by then.
    const [rejoined] = await leading(victim);
    const rejoinedAt = Date.now();
    await rig.daemons.until(`two cycles of ${victim} after it rejoined`, async () => (await count(`SELECT count(*) AS n FROM cycles WHERE account = '${rejoined}' AND started_at > ${rejoinedAt}`)) >= 2, 30_000);
    expect(await count(staleCycles)).toBe(cyclesBeforeFreeze); // no cycle of before the freeze stored late
    expect(rig.hook.requests.length - requestsAtResume).toBeLessThanOrEqual(1); // at most the message it was in the middle of
    expect(rig.slack.requests.length - slackAtResume).toBeLessThanOrEqual(1);

    // Every notified transition delivered once; a send in flight at the freeze at most twice.
    await rig.daemons.until('every transition delivered', allDelivered, 60_000);
    const expected = await notified();
    const extra = expectEachDeliveredOnce(expected, rig.hook.requests); // a whole message in flight at the freeze may come twice
    const slackMessages = await count("SELECT count(*) AS n FROM outbox WHERE notifier = 'ops-slack' AND status = 'delivered'");
    expect(rig.slack.requests.length).toBeGreaterThanOrEqual(slackMessages);
    expect(rig.slack.requests.length).toBeLessThanOrEqual(slackMessages + 1);
    for (const n of NAMES) children.get(n)!.kill('SIGTERM');
    for (const n of NAMES) expect(await rig.daemons.exited(children.get(n)!)).toEqual({ code: 0, signal: null });
    console.log(
      `frozen (2 replicas, 2 accounts, 3 s lease, 1 s schedule, PostgreSQL): ${victim} stopped for ${resumedAt - stoppedAt} ms; ` +
        `${other} led acme ${takenAt - stoppedAt} ms after the freeze (the issue's bound: two poll intervals plus the lease, ${2 * POLL_MS + LEASE_MS} ms); ` +
        `${[...expected.values()].reduce((x, y) => x + y, 0)} transitions notified, ${extra} re-sent`,
    );
  }, 300_000);
});
