/**
 * The contract of the alert repositories (src/alerts/repositories.ts) as one suite any store runs:
 * the cycle unit of work (`CycleCommitter`), the alert states and transitions it writes, the
 * group_wait queue (`GroupQueue`), the reads of the CLI and the API (`AlertQueries`) and the
 * silence writes (`SilenceWrites`). Every call that may be asynchronous is awaited (the queries
 * too: the PostgreSQL store answers them with Promises). Run by alert-store.contract.test.ts
 * against SQLite and by alert-store.pg.contract.test.ts against PostgreSQL.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AlertQueries, AlertWrite, CycleCommitter, CycleView, GroupQueue, QueuedItem, SilenceWrites } from '../../src/alerts/repositories.js';
import type { Awaitable } from '../../src/awaitable.js';
import { initialState } from '../../src/alerts/state.js';
import type { AlertState, Transition } from '../../src/alerts/types.js';
import { silenceState } from '../../src/alerts/silences.js';
import type { OutboxRepository } from '../../src/domain/outbox.js';
import type { AlertItem, NotificationMessage } from '../../src/domain/notifications.js';
import type { CycleRecord } from '../../src/domain/store.js';
import { item } from '../notify/fixtures.js';
import { okCycle, snap } from '../store/model.js';

export interface AlertStoreFixture {
  /** The whole cycle as one unit of work. */
  committer: CycleCommitter<AlertItem> & { lastCycle(): Awaitable<CycleRecord | undefined> };
  queries: AlertQueries & SilenceWrites;
  queue: GroupQueue<AlertItem, NotificationMessage>;
  outbox: OutboxRepository;
  /** Queues items as a cycle would (only for the queue's own tests). */
  enqueue(items: readonly QueuedItem<AlertItem>[]): void | Promise<void>;
  /** Adds a queued item of `notifier` whose stored JSON is unreadable. */
  plantDamagedItem(notifier: string, now: number): void | Promise<void>;
  close(): void | Promise<void>;
}

const T = Date.parse('2026-05-01T09:00:00Z');
const RULE = { name: 'box-offline', kind: 'disconnected', severity: 'critical' as const };

function firing(serial: string, at: number): AlertState {
  return { ...initialState(RULE, serial, at), status: 'firing', activeSince: at, activeCycles: 1, firingSince: at, notifiedFiring: true, lastNotifiedAt: at, summary: 'disconnected' };
}

function transition(state: AlertState, from: AlertState['status'], at: number): Transition {
  return { key: state.key, rule: state.rule, kind: state.kind, serial: state.serial, severity: state.severity, from, to: state.status, at, value: 0, threshold: null, summary: state.summary, heldBack: null, heldBy: [] };
}

const nothing: AlertWrite<AlertItem> = { states: new Map(), dropped: [], transitions: [], queued: [] };

export function alertStoreContract(name: string, make: () => AlertStoreFixture | Promise<AlertStoreFixture>): void {
  describe(`alert repositories contract: ${name}`, () => {
    let f: AlertStoreFixture;
    beforeEach(async () => {
      f = await make();
    });
    afterEach(async () => {
      await f.close();
    });

    /** Commits one ok cycle at `t` whose alert stage writes `write(view)`. */
    async function commit(t: number, write: (view: CycleView) => AlertWrite<AlertItem> = () => nothing, serials = ['BX-1', 'BX-2']) {
      let seen: CycleView | undefined;
      const decide = (view: CycleView) => {
        seen = view;
        return { alerts: write(view), result: 'decided' };
      };
      const out = await f.committer.commitCycle(okCycle(t, serials.map((s) => snap(s, { lastSeen: t }))), t, decide);
      return { ...out, view: seen as CycleView };
    }

    describe('the alert stage', () => {
      it('reads the stored alert states and the silences not ended, and stores the states, transitions and queued items it returns', async () => {
        const a = firing('BX-1', T);
        const first = await commit(T, () => ({
          states: new Map([[a.key, a]]),
          dropped: [],
          transitions: [transition(a, 'inactive', T)],
          queued: [{ notifier: 'mail', createdAt: T, item: item({ serial: 'BX-1' }) }],
        }));
        expect(first.result).toBe('decided');
        expect(first.view.states.size).toBe(0);
        const silence = await f.queries.addSilence({ matchers: { boxes: ['BX-2'] }, startsAt: T, endsAt: T + 3_600_000, comment: 'maintenance', createdBy: 'ops' }, T);
        await f.queries.addSilence({ matchers: { boxes: ['BX-3'] }, startsAt: T, endsAt: T + 10_000, comment: 'over', createdBy: 'ops' }, T);
        const second = await commit(T + 30_000);
        expect([...second.view.states.values()]).toEqual([a]);
        expect(second.view.silences.map((s) => s.id)).toEqual([silence.id]);
        expect(await f.queries.states()).toEqual(new Map([[a.key, a]]));
        expect((await f.queries.transitionsSince(T)).map((t) => [t.serial, t.from, t.to])).toEqual([['BX-1', 'inactive', 'firing']]);
        expect((await f.queue.pending(10)).map((q) => [q.notifier, q.item.serial])).toEqual([['mail', 'BX-1']]);
      });

      it('alerts back at rest leave the states; changed states replace the stored ones', async () => {
        const a = firing('BX-1', T);
        const b = firing('BX-2', T);
        await commit(T, () => ({ states: new Map([[a.key, a], [b.key, b]]), dropped: [], transitions: [], queued: [] }));
        const resolved: AlertState = { ...b, status: 'resolved', since: T + 30_000, resolvedAt: T + 30_000, notifiedFiring: false };
        await commit(T + 30_000, () => ({ states: new Map([[b.key, resolved]]), dropped: [a.key], transitions: [], queued: [] }));
        expect([...(await f.queries.states()).values()]).toEqual([resolved]);
      });

      it('when the alert stage throws, none of its writes are stored', async () => {
        const a = firing('BX-1', T);
        await commit(T, () => ({ states: new Map([[a.key, a]]), dropped: [], transitions: [transition(a, 'inactive', T)], queued: [] }));
        const b = firing('BX-2', T + 30_000);
        await expect(
          commit(T + 30_000, () => {
            throw new Error('rule bug');
          }),
        ).rejects.toThrow('rule bug');
        expect(await f.queries.states()).toEqual(new Map([[a.key, a]]));
        await commit(T + 60_000, () => ({ states: new Map([[a.key, a], [b.key, b]]), dropped: [], transitions: [transition(b, 'inactive', T + 60_000)], queued: [] }));
        expect((await f.queries.transitionsSince(0)).map((t) => t.serial)).toEqual(['BX-1', 'BX-2']);
      });
    });

    describe('the cycle unit of work', () => {
      it('hands the alert stage the fleet after the cycle, the alert states and the silences, and stores what it returns', async () => {
        const a = firing('BX-1', T);
        const first = await commit(T, () => ({
          states: new Map([[a.key, a]]),
          dropped: [],
          transitions: [transition(a, 'inactive', T)],
          queued: [{ notifier: 'mail', createdAt: T, item: item({ serial: 'BX-1' }) }],
        }));
        expect(first.result).toBe('decided');
        expect(first.recorded).toEqual({ startedAt: T, clockBehindMs: 0 });
        expect(first.view.boxes.map((b) => b.serial)).toEqual(['BX-1', 'BX-2']);
        expect(first.view.states.size).toBe(0);

        const silence = await f.queries.addSilence({ matchers: { boxes: ['BX-2'] }, startsAt: T, endsAt: T + 3_600_000, comment: 'maintenance', createdBy: 'ops' }, T);
        const second = await commit(T + 30_000);
        expect([...second.view.states.values()]).toEqual([a]);
        expect(second.view.silences.map((s) => s.id)).toEqual([silence.id]);
        expect((await f.committer.lastCycle())?.startedAt).toBe(T + 30_000);
        expect((await f.queue.pending(10)).map((q) => [q.notifier, q.item.serial])).toEqual([['mail', 'BX-1']]);
      });

      it('when the alert stage throws, nothing of the cycle is stored', async () => {
        const a = firing('BX-1', T);
        await commit(T, () => ({ states: new Map([[a.key, a]]), dropped: [], transitions: [transition(a, 'inactive', T)], queued: [] }));
        const failing = async () =>
          f.committer!.commitCycle(okCycle(T + 30_000, [snap('BX-9')]), T + 30_000, () => {
            throw new Error('rule bug');
          });
        await expect(failing()).rejects.toThrow('rule bug');
        expect((await f.committer.lastCycle())?.startedAt).toBe(T);
        expect((await commit(T + 60_000)).view.boxes.map((b) => b.serial)).toEqual(['BX-1', 'BX-2']);
        expect(await f.queries.transitionsSince(0)).toHaveLength(1);
      });

      it("with a scope, the alert stage gets only the scope's accounts' boxes and alerts (the accounts not configured too, when asked), and the others' stay as stored", async () => {
        const accountCycle = (account: string, t: number, serial: string): ReturnType<typeof okCycle> => {
          const write = okCycle(t, [snap(serial, { lastSeen: t })]);
          return { ...write, cycle: { ...write.cycle, account } };
        };
        const alerts = { default: firing('BX-1', T), acme: firing('acme/BX-1', T), gone: firing('gone/BX-1', T), acmeFleet: firing('acme/', T) };
        for (const [account, serial, states] of [['default', 'BX-1', [alerts.default]], ['acme', 'acme/BX-1', [alerts.acme, alerts.acmeFleet]], ['gone', 'gone/BX-1', [alerts.gone]]] as const) {
          await f.committer.commitCycle(accountCycle(account, T, serial), T, () => ({ alerts: { ...nothing, states: new Map(states.map((s) => [s.key, s])) }, result: null }));
        }
        let seen: CycleView | undefined;
        const resolved: AlertState = { ...alerts.acme, status: 'resolved', since: T + 30_000, resolvedAt: T + 30_000, notifiedFiring: false };
        await f.committer.commitCycle(accountCycle('acme', T + 30_000, 'acme/BX-1'), T + 30_000, (view) => {
          seen = view;
          return { alerts: { ...nothing, states: new Map([[resolved.key, resolved], [alerts.acmeFleet.key, alerts.acmeFleet]]) }, result: null };
        }, undefined, { account: 'acme' });
        expect(seen?.boxes.map((b) => b.serial)).toEqual(['acme/BX-1']);
        expect([...(seen?.states.keys() ?? [])].sort()).toEqual([alerts.acmeFleet.key, alerts.acme.key].sort());
        // The first configured account's scope: its own and every account not configured ("gone").
        await f.committer.commitCycle(accountCycle('default', T + 30_000, 'BX-1'), T + 30_000, (view) => {
          seen = view;
          return { alerts: { ...nothing, states: new Map([[alerts.default.key, alerts.default]]), dropped: [alerts.gone.key] }, result: null };
        }, undefined, { account: 'default', alsoNotIn: ['default', 'acme'] });
        expect(seen?.boxes.map((b) => b.serial)).toEqual(['BX-1', 'gone/BX-1']);
        expect([...(seen?.states.keys() ?? [])].sort()).toEqual([alerts.default.key, alerts.gone.key].sort());
        // What each cycle wrote is stored; what was out of its scope is as it was.
        expect(await f.queries.states()).toEqual(new Map([[alerts.default.key, alerts.default], [resolved.key, resolved], [alerts.acmeFleet.key, alerts.acmeFleet]]));
      });

      it('a cycle whose start is not after the last one (the clock stepped back) is still recorded, just after it, and says by how much', async () => {
        await commit(T);
        const back = await commit(T - 90_000, () => nothing, ['BX-1', 'BX-3']);
        expect(back.recorded).toEqual({ startedAt: T + 1, clockBehindMs: 90_000 });
        expect(back.view.boxes.map((b) => b.serial)).toEqual(['BX-1', 'BX-2', 'BX-3']);
        expect((await f.committer.lastCycle())?.startedAt).toBe(T + 1);
        const same = await commit(T + 1);
        expect(same.recorded).toEqual({ startedAt: T + 2, clockBehindMs: 0 });
        expect((await commit(T + 30_000)).recorded).toEqual({ startedAt: T + 30_000, clockBehindMs: 0 });
      });
    });

    describe('alert history reads', () => {
      it('transitions since a time, oldest first, of every box or of one', async () => {
        const a = firing('BX-1', T);
        const b = firing('BX-2', T + 30_000);
        await commit(T, () => ({ ...nothing, states: new Map([[a.key, a]]), transitions: [transition(a, 'inactive', T)] }));
        await commit(T + 30_000, () => ({ ...nothing, states: new Map([[a.key, a], [b.key, b]]), transitions: [transition(b, 'inactive', T + 30_000)] }));
        expect((await f.queries.transitionsSince(T)).map((t) => t.serial)).toEqual(['BX-1', 'BX-2']);
        expect((await f.queries.transitionsSince(T + 1)).map((t) => t.serial)).toEqual(['BX-2']);
        expect((await f.queries.transitionsSince(0, 'BX-1')).map((t) => t.serial)).toEqual(['BX-1']);
        expect(await f.queries.transitionsSince(0, 'BX-404')).toEqual([]);
        const [row] = await f.queries.transitionsSince(0, 'BX-1');
        expect(row).toEqual({ ...transition(a, 'inactive', T), kind: '', id: expect.any(Number) as number }); // kind is not stored (see TransitionRow)
      });

      it('the notification log: outbox messages since a time, newest first, with the items they told about', async () => {
        await f.outbox.enqueue('mail', { kind: 'alert', items: [item({ serial: 'BX-1' })], createdAt: T }, T);
        await f.outbox.enqueue('slack', { kind: 'alert', items: [item({ serial: 'BX-2' }), item({ serial: 'BX-3' })], createdAt: T + 10 }, T + 10);
        const log = await f.queries.outboxSince(T);
        expect(log.map((e) => [e.notifier, e.status, e.items.map((i) => i.serial)])).toEqual([
          ['slack', 'pending', ['BX-2', 'BX-3']],
          ['mail', 'pending', ['BX-1']],
        ]);
        expect((await f.queries.outboxSince(T + 1)).map((e) => e.notifier)).toEqual(['slack']);
        expect((await f.queries.outboxSince(0, 1)).map((e) => e.notifier)).toEqual(['slack']);
      });
    });

    describe('silences', () => {
      const input = { matchers: { boxes: ['BX-*'], rules: ['box-offline'] }, comment: 'maintenance', createdBy: 'ops' };

      it('are listed while pending or active, read by id, and gone from the list once ended', async () => {
        const active = await f.queries.addSilence({ ...input, startsAt: T, endsAt: T + 60_000 }, T);
        const later = await f.queries.addSilence({ ...input, startsAt: T + 120_000, endsAt: T + 180_000 }, T);
        expect(await f.queries.silence(active.id)).toEqual(active);
        expect((await f.queries.silences(T)).map((s) => s.id)).toEqual([active.id, later.id]);
        expect((await f.queries.silences(T + 60_000)).map((s) => s.id)).toEqual([later.id]);
        expect((await f.queries.silences(T + 60_000, { all: true })).map((s) => s.id)).toEqual([active.id, later.id]);
        expect(await f.queries.silence('nope')).toBeUndefined();
      });

      it('expiring an active silence ends it now; an ended or unknown one cannot be expired', async () => {
        const s = await f.queries.addSilence({ ...input, startsAt: T, endsAt: T + 60_000 }, T);
        expect(await f.queries.expireSilence(s.id, T + 10_000)).toBe(true);
        expect(await f.queries.silences(T + 10_000)).toEqual([]);
        expect(await f.queries.silence(s.id)).toMatchObject({ startsAt: T, endsAt: T + 10_000 });
        expect(await f.queries.expireSilence(s.id, T + 20_000)).toBe(false);
        expect(await f.queries.expireSilence('nope', T)).toBe(false);
      });

      it('expiring a silence that has not started ends it (as Alertmanager does): it is expired, not pending', async () => {
        const s = await f.queries.addSilence({ ...input, startsAt: T + 3_600_000, endsAt: T + 7_200_000 }, T);
        expect(await f.queries.expireSilence(s.id, T)).toBe(true);
        expect(await f.queries.silences(T)).toEqual([]);
        const expired = await f.queries.silence(s.id);
        expect(expired).toMatchObject({ startsAt: T, endsAt: T });
        expect(silenceState(expired!, T)).toBe('expired');
        expect(silenceState(expired!, T + 5_000_000)).toBe('expired');
        expect(await f.queries.expireSilence(s.id, T + 1)).toBe(false);
      });
    });

    describe('the group_wait queue', () => {
      it('gives the queued items per notifier, oldest first, at most so many of each', async () => {
        await f.enqueue([
          { notifier: 'mail', createdAt: T, item: item({ serial: 'A' }) },
          { notifier: 'slack', createdAt: T, item: item({ serial: 'B' }) },
          { notifier: 'mail', createdAt: T + 1, item: item({ serial: 'C' }) },
          { notifier: 'mail', createdAt: T + 2, item: item({ serial: 'D' }) },
        ]);
        const rows = await f.queue.pending(2);
        expect(rows.map((r) => [r.notifier, r.item.serial, r.createdAt])).toEqual([
          ['mail', 'A', T],
          ['mail', 'C', T + 1],
          ['slack', 'B', T],
        ]);
        expect(rows[0]!.item).toEqual(item({ serial: 'A' }));
      });

      it('a release takes the batch out of the queue and puts its message into the outbox, atomically', async () => {
        await f.enqueue([
          { notifier: 'mail', createdAt: T, item: item({ serial: 'A' }) },
          { notifier: 'mail', createdAt: T, item: item({ serial: 'B' }) },
          { notifier: 'gone', createdAt: T, item: item({ serial: 'C' }) },
        ]);
        const rows = await f.queue.pending(10);
        const mail = rows.filter((r) => r.notifier === 'mail');
        const message: NotificationMessage = { kind: 'alert', items: mail.map((r) => r.item), createdAt: T + 5_000 };
        await f.queue.release(
          [
            { notifier: 'mail', ids: mail.map((r) => r.id), message },
            { notifier: 'gone', ids: rows.filter((r) => r.notifier === 'gone').map((r) => r.id), message: null },
          ],
          T + 5_000,
        );
        expect(await f.queue.pending(10)).toEqual([]);
        const claimed = await f.outbox.claim('mail', T + 5_000, 10, 60_000);
        expect(claimed.map((r) => r.message)).toEqual([message]);
        expect(await f.outbox.claim('gone', T + 5_000, 10, 60_000)).toEqual([]);
      });

      it('a damaged queued item is dropped, never blocking the items after it', async () => {
        await f.plantDamagedItem('mail', T);
        await f.enqueue([{ notifier: 'mail', createdAt: T, item: item({ serial: 'A' }) }]);
        expect((await f.queue.pending(10)).map((r) => r.item.serial)).toEqual(['A']);
        expect((await f.queue.pending(10)).map((r) => r.item.serial)).toEqual(['A']);
      });
    });
  });
}
