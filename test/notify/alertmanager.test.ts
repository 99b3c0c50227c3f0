import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AlertmanagerNotifier, VALIDITY_RESENDS, buildAlertmanagerAlerts, type PostableAlert } from '../../src/notify/alertmanager.js';
import type { NotifyError } from '../../src/notify/errors.js';
import { Resender } from '../../src/notify/resend.js';
import { buildWebhookPayload } from '../../src/notify/webhook.js';
import { ALERTMANAGER_BIN, alertmanagerAvailable, startAlertmanager, type RunningAlertmanager } from '../helpers/alertmanager-process.js';
import { webhookMessageSchema } from '../helpers/alertmanager-format.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { startHttpReceiver, type HttpReceiver } from '../helpers/http-receiver.js';
import { channelRig, deliverThrough429 } from './channel-rig.js';
import { T0, batteryItem, item, message } from './fixtures.js';
import { collectChain } from './secrets.js';
import { until as waitUntil } from '../helpers/wait.js';

const MINUTE = 60_000;

describe('buildAlertmanagerAlerts (POST /api/v2/alerts)', () => {
  it('labels alertname, rule, kind, severity, serial, box, location; firing endsAt is 4 resend intervals ahead', () => {
    const now = T0 + 10 * MINUTE;
    const [alert] = buildAlertmanagerAlerts(message([batteryItem]), 'am', now, MINUTE);
    expect(alert).toEqual({
      labels: { alertname: 'battery-low', rule: 'battery-low', kind: 'low_battery', severity: 'warning', serial: 'SN-0007', box: 'Dock 2', location: 'Warehouse' },
      annotations: expect.objectContaining({ summary: 'box SN-0007 "Dock 2" battery 12% below 20%', value: '12%', threshold: 'below 20' }) as Record<string, string>,
      startsAt: '2026-01-01T00:00:00.000Z',
      endsAt: new Date(now + VALIDITY_RESENDS * MINUTE).toISOString(),
    });
  });

  it('a resolved alert carries its real endsAt, whenever it is sent', () => {
    const [alert] = buildAlertmanagerAlerts(message([item({ status: 'resolved', resolvedAt: T0 + 3 * MINUTE })]), 'am', T0 + 60 * MINUTE, MINUTE);
    expect(alert?.endsAt).toBe('2026-01-01T00:03:00.000Z');
  });
});

describe('AlertmanagerNotifier against a local receiver', () => {
  let receiver: HttpReceiver;
  beforeEach(async () => {
    receiver = await startHttpReceiver({ path: '/am/api/v2/alerts', ok: { status: 200, body: '' }, name: 'Alertmanager' });
  });
  afterEach(async () => {
    await receiver.close();
  });

  it('posts the alerts array with basic auth from the URL; 429 is retried after Retry-After', async () => {
    const rig = channelRig(new AlertmanagerNotifier({ name: 'am', url: `http://boxwatch:Pa55w0rd99@127.0.0.1:${receiver.port}/am/` }));
    await deliverThrough429(rig, receiver, message([item()]), 'am');
    const [req] = receiver.received;
    expect(req?.headers.authorization).toBe(`Basic ${Buffer.from('boxwatch:Pa55w0rd99').toString('base64')}`);
    expect((req?.body as PostableAlert[])[0]?.labels.serial).toBe('SN-0042');
  });

  it('errors show neither the password nor the basic-auth header', async () => {
    receiver.respondWith({ status: 400, body: 'bad request from boxwatch:Pa55w0rd99' });
    const err = (await new AlertmanagerNotifier({ name: 'am', url: `http://boxwatch:Pa55w0rd99@127.0.0.1:${receiver.port}/am` }).send(message([item()])).catch((e: unknown) => e)) as NotifyError;
    expect([err.code, err.retryable]).toEqual(['notify_rejected', false]);
    const text = collectChain(err).join('\n');
    expect(text).not.toContain('Pa55w0rd99');
    expect(text).not.toContain(Buffer.from('boxwatch:Pa55w0rd99').toString('base64'));
  });

  it('the resender sends the firing alerts every resend interval, moving endsAt ahead; nothing when none fires', async () => {
    const clock = new FakeClock(T0);
    const notifier = new AlertmanagerNotifier({ name: 'am', url: `http://127.0.0.1:${receiver.port}/am`, resendIntervalMs: MINUTE, now: () => clock.now() });
    let firing = [item({ status: 'repeat' })];
    const resender = new Resender({ notifiers: [notifier], clock, firing: () => firing });
    resender.start();
    clock.advance(MINUTE);
    await receiver.waitFor(1);
    expect((receiver.received[0]?.body as PostableAlert[])[0]?.endsAt).toBe(new Date(T0 + MINUTE + VALIDITY_RESENDS * MINUTE).toISOString());
    await resender.stop();
    // Each resend moves endsAt ahead.
    clock.advance(MINUTE);
    expect(await resender.resendOnce(notifier)).toBe(true);
    expect((receiver.received[1]?.body as PostableAlert[])[0]?.endsAt).toBe(new Date(T0 + 2 * MINUTE + VALIDITY_RESENDS * MINUTE).toISOString());
    firing = [];
    expect(await resender.resendOnce(notifier)).toBe(true);
    expect(receiver.requests).toHaveLength(2);
    // A failed resend is reported, not thrown: the next interval tries again.
    firing = [item({ status: 'repeat' })];
    receiver.respondWith({ status: 503, body: 'down' }, 1);
    expect(await resender.resendOnce(notifier)).toBe(false);
  });
});

const available = alertmanagerAvailable();

describe.skipIf(!available)(
  available ? `a real Alertmanager (${ALERTMANAGER_BIN})` : `a real Alertmanager: SKIPPED, ${ALERTMANAGER_BIN} is not installed (apt-get install prometheus-alertmanager)`,
  () => {
    let am: RunningAlertmanager;
    let hook: HttpReceiver;

    beforeAll(async () => {
      hook = await startHttpReceiver({ path: '/am-hook', name: 'Alertmanager webhook' });
      am = await startAlertmanager(hook.url);
    }, 60_000);
    afterAll(async () => {
      await am?.stop();
      await hook?.close();
    });

    async function activeAlerts(): Promise<{ labels: Record<string, string>; endsAt: string; status: { state: string } }[]> {
      const res = await fetch(`${am.url}/api/v2/alerts`);
      expect(res.status).toBe(200);
      return (await res.json()) as { labels: Record<string, string>; endsAt: string; status: { state: string } }[];
    }

    const until = <T>(probe: () => Promise<T | undefined>, what: string): Promise<T> =>
      waitUntil(what, probe, { timeoutMs: 20_000, everyMs: 100, detail: () => am.output.join('') }) as Promise<T>;

    it('a forwarded alert is active in Alertmanager, its webhook has our format, and it resolves', async () => {
      const now = Date.now();
      const notifier = new AlertmanagerNotifier({ name: 'am', url: am.url });
      const firingItem = item({ since: now - 5 * MINUTE, boxName: 'Lobby "east" <b>' });
      await notifier.send(message([firingItem], now));

      const alert = await until(async () => (await activeAlerts()).find((a) => a.labels.serial === 'SN-0042'), 'the alert in GET /api/v2/alerts');
      expect(alert.status.state).toBe('active');
      expect(alert.labels).toEqual({ alertname: 'box-offline', rule: 'box-offline', kind: 'disconnected', severity: 'critical', serial: 'SN-0042', box: 'Lobby "east" <b>', location: 'Building A' });
      // Valid for four resend intervals, so it does not resolve by Alertmanager's timeout while boxwatch resends.
      expect(Date.parse(alert.endsAt)).toBeGreaterThanOrEqual(now + 3 * MINUTE);

      // Alertmanager's own webhook for this alert: it matches the schema our webhook channel is
      // tested against, and our payload for the same alert has the very same shape and labels.
      const [fired] = await hook.waitFor(1, 20_000);
      const real = webhookMessageSchema.parse(fired?.body);
      expect(real.status).toBe('firing');
      const ours = buildWebhookPayload(message([firingItem], now), 'am');
      expect(Object.keys(ours).sort()).toEqual(Object.keys(real).sort());
      expect(Object.keys(ours.alerts[0] ?? {}).sort()).toEqual(Object.keys(real.alerts[0] ?? {}).sort());
      expect(ours.alerts[0]?.labels).toEqual(real.alerts[0]?.labels);
      expect(ours.alerts[0]?.annotations).toEqual(real.alerts[0]?.annotations);
      // Same instant (Go drops trailing zeros of the fraction: .78Z for .780Z).
      expect(Date.parse(ours.alerts[0]?.startsAt ?? '')).toBe(Date.parse(real.alerts[0]?.startsAt ?? ''));

      // Resolved at an evaluation already past when Alertmanager receives it (a future endsAt would
      // not resolve it: Alertmanager keeps the later endsAt of a still-active alert).
      const resolvedAt = Date.now() - 1;
      await notifier.send(message([{ ...firingItem, status: 'resolved', resolvedAt }], resolvedAt));
      await until(async () => ((await activeAlerts()).some((a) => a.labels.serial === 'SN-0042') ? undefined : true), 'the alert to resolve');
      const messages = await hook.waitFor(2, 20_000);
      const resolved = webhookMessageSchema.parse(messages[1]?.body);
      expect(resolved.status).toBe('resolved');
      expect(Date.parse(resolved.alerts[0]?.endsAt ?? '')).toBe(resolvedAt);
    }, 60_000);
  },
);
