import { createHmac } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NotifyError } from '../../src/notify/errors.js';
import { WebhookNotifier, buildWebhookPayload, webhookSignature } from '../../src/notify/webhook.js';
import { startHttpReceiver, type HttpReceiver } from '../helpers/http-receiver.js';
import { webhookMessageSchema } from '../helpers/alertmanager-format.js';
import { channelRig, deliverThrough429 } from './channel-rig.js';
import { HOSTILE, T0, batteryItem, item, message, powerCut } from './fixtures.js';
import { collectChain } from './secrets.js';
import { dependantSignals } from '../helpers/signal-refs.js';

const SECRET = 'whsec_0123456789abcdef';

describe('buildWebhookPayload (Alertmanager webhook format, version 4)', () => {
  it('one firing alert: labels, annotations, startsAt, zero endsAt, fingerprint, valid against the format', () => {
    const payload = buildWebhookPayload(message([batteryItem]), 'ops-hook');
    expect(webhookMessageSchema.safeParse(payload).success).toBe(true);
    expect(payload).toMatchObject({ version: '4', status: 'firing', receiver: 'ops-hook', truncatedAlerts: 0, groupKey: '{}:{receiver="ops-hook"}' });
    const [alert] = payload.alerts;
    expect(alert).toMatchObject({
      status: 'firing',
      labels: { alertname: 'battery-low', rule: 'battery-low', kind: 'low_battery', severity: 'warning', serial: 'SN-0007', box: 'Dock 2', location: 'Warehouse' },
      annotations: { summary: 'box SN-0007 "Dock 2" battery 12% below 20%', value: '12%', threshold: 'below 20' },
      startsAt: '2026-01-01T00:00:00.000Z',
      endsAt: '0001-01-01T00:00:00Z',
    });
    expect(alert?.annotations.description).toContain('FIRING warning battery-low');
    expect(payload.commonLabels).toEqual(alert?.labels);
  });

  it('a resolved alert has its real endsAt and the same fingerprint as when it fired', () => {
    const firing = buildWebhookPayload(message([item()]), 'h').alerts[0];
    const resolved = buildWebhookPayload(message([item({ status: 'resolved', resolvedAt: T0 + 90_000 })]), 'h');
    expect(resolved.status).toBe('resolved');
    expect(resolved.alerts[0]).toMatchObject({ status: 'resolved', endsAt: '2026-01-01T00:01:30.000Z', fingerprint: firing?.fingerprint });
    // A repeat is still the same alert, firing.
    expect(buildWebhookPayload(message([item({ status: 'repeat' })]), 'h').alerts[0]).toMatchObject({ status: 'firing', fingerprint: firing?.fingerprint });
  });

  it('a group lists every alert; common labels are the shared ones; firing wins the group status', () => {
    const payload = buildWebhookPayload(message([item(), item({ serial: 'SN-0043', boxName: 'Hall', status: 'resolved', resolvedAt: T0 + 1 })]), 'h');
    expect(webhookMessageSchema.safeParse(payload).success).toBe(true);
    expect(payload.status).toBe('firing');
    expect(payload.alerts).toHaveLength(2);
    expect(payload.commonLabels).toEqual({ alertname: 'box-offline', rule: 'box-offline', kind: 'disconnected', severity: 'critical', location: 'Building A' });
    expect(new Set(payload.alerts.map((a) => a.fingerprint)).size).toBe(2);
    expect(buildWebhookPayload(powerCut(300), 'h').alerts).toHaveLength(300);
  });

  it('gateway alerts carry no box labels; test and delivery-failure messages are alerts of their own', () => {
    const gw = buildWebhookPayload(message([item({ rule: 'gateway_unreachable', ruleKind: 'gateway_unreachable', serial: '', boxName: null, location: null, summary: 'gateway unreachable' })]), 'h');
    expect(gw.alerts[0]?.labels).toEqual({ alertname: 'gateway_unreachable', rule: 'gateway_unreachable', kind: 'gateway_unreachable', severity: 'critical' });
    const test = buildWebhookPayload({ kind: 'test', items: [], createdAt: T0 }, 'h');
    expect(webhookMessageSchema.safeParse(test).success).toBe(true);
    expect(test.alerts[0]?.labels).toEqual({ alertname: 'boxwatch_test', severity: 'info' });
    const failure = buildWebhookPayload(
      { kind: 'delivery_failure', items: [], createdAt: T0, failures: [{ notifier: 'ops-slack', failingSince: T0, dead: 2, lastError: 'Slack answered HTTP 404' }] },
      'h',
    );
    expect(webhookMessageSchema.safeParse(failure).success).toBe(true);
    expect(failure.alerts[0]?.labels).toEqual({ alertname: 'boxwatch_delivery_failure', severity: 'critical', notifier: 'ops-slack' });
  });

  it('box text stays data: control characters shown as visible escapes (the one sanitiser), JSON escaping by the serializer', () => {
    const payload = buildWebhookPayload(message([item({ boxName: `${HOSTILE}\n\u001b[2Jfake line`, location: '"},{"x":1' })]), 'h');
    const body = JSON.stringify(payload);
    const back = JSON.parse(body) as typeof payload;
    expect(back.alerts[0]?.labels.box).toBe(`${HOSTILE}\\x0a\\x1b[2Jfake line`);
    expect(back.alerts[0]?.labels.location).toBe('"},{"x":1');
    expect(body).not.toContain('\\n');
  });
});

describe('WebhookNotifier against a real receiver', () => {
  let receiver: HttpReceiver;
  beforeEach(async () => {
    receiver = await startHttpReceiver({ path: '/hooks/boxwatch?token=t0k3nT0k3nT0k3n', ok: { status: 200, body: '' } });
  });
  afterEach(async () => {
    await receiver.close();
  });

  it('POSTs the format as JSON with custom headers, an idempotency key and a signature the receiver can check', async () => {
    const notifier = new WebhookNotifier({ name: 'ops-hook', url: receiver.url, hmacSecret: SECRET, headers: { 'x-team': 'telephony' }, now: () => T0 + 42_000 });
    await notifier.send(message([batteryItem]));
    const [req] = receiver.received;
    expect(req?.method).toBe('POST');
    expect(req?.headers['content-type']).toBe('application/json');
    expect(req?.headers['x-team']).toBe('telephony');
    expect(webhookMessageSchema.parse(req?.body).alerts[0]?.labels.serial).toBe('SN-0007');
    // The receiver's check: HMAC-SHA256 over "<timestamp>.<raw body>" with the shared secret.
    const timestamp = String(req?.headers['x-boxwatch-timestamp']);
    expect(timestamp).toBe(String((T0 + 42_000) / 1000));
    const expected = `sha256=${createHmac('sha256', SECRET).update(`${timestamp}.${req?.raw}`).digest('hex')}`;
    expect(req?.headers['x-boxwatch-signature']).toBe(expected);
    expect(webhookSignature(SECRET, Number(timestamp), `${req?.raw} `)).not.toBe(expected);
    expect(req?.headers['idempotency-key']).toMatch(/^[0-9a-f]{32}$/);
  });

  it('no signature headers without hmac_secret', async () => {
    await new WebhookNotifier({ name: 'h', url: receiver.url }).send(message([item()]));
    expect(receiver.received[0]?.headers['x-boxwatch-signature']).toBeUndefined();
  });

  it('429 with Retry-After: the dispatcher waits, retries, and the copy carries the same idempotency key', async () => {
    const notifier = new WebhookNotifier({ name: 'ops-hook', url: receiver.url });
    const rig = channelRig(notifier);
    await deliverThrough429(rig, receiver, message([item()]), 'ops-hook');
    const keys = receiver.requests.map((r) => r.headers['idempotency-key']);
    expect(keys).toHaveLength(2);
    expect(keys[0]).toBe(keys[1]);
    // Another message, another key.
    await rig.deliver(message([item({ status: 'resolved', resolvedAt: T0 + 60_000 })]));
    expect(receiver.requests[2]?.headers['idempotency-key']).not.toBe(keys[0]);
  });

  it('5xx is retried, 4xx is given up at once; errors never show the URL token', async () => {
    const notifier = new WebhookNotifier({ name: 'ops-hook', url: receiver.url, hmacSecret: SECRET });
    receiver.respondWith({ status: 503, body: `down, see ${receiver.url}` }, 1);
    const e503 = (await notifier.send(message([item()])).catch((e: unknown) => e)) as NotifyError;
    expect([e503.code, e503.retryable]).toEqual(['notify_server_error', true]);
    receiver.respondWith({ status: 400, body: 'bad token t0k3nT0k3nT0k3n' }, 1);
    const e400 = (await notifier.send(message([item()])).catch((e: unknown) => e)) as NotifyError;
    expect([e400.code, e400.retryable]).toEqual(['notify_rejected', false]);
    for (const err of [e503, e400]) {
      const text = collectChain(err).join('\n');
      expect(text).not.toContain('t0k3nT0k3nT0k3n');
      expect(text).not.toContain(SECRET);
    }
    await receiver.stop();
    const unreachable = (await notifier.send(message([item()])).catch((e: unknown) => e)) as NotifyError;
    expect([unreachable.code, unreachable.retryable]).toEqual(['notify_unreachable', true]);
    expect(collectChain(unreachable).join('\n')).not.toContain('t0k3nT0k3nT0k3n');
  });

  it('a redirect is not followed: the message is not sent on, and it is tried again later', async () => {
    const notifier = new WebhookNotifier({ name: 'ops-hook', url: receiver.url });
    receiver.respondWith({ status: 302, headers: { location: 'http://127.0.0.1:1/elsewhere' } }, 1);
    const err = (await notifier.send(message([item()])).catch((e: unknown) => e)) as NotifyError;
    expect([err.code, err.retryable]).toEqual(['notify_unreachable', true]);
    expect(err.message).toMatch(/unexpected redirect \(HTTP 302\)/);
    expect(receiver.requests).toHaveLength(1);
  });

  it('a huge error answer is cut off: the error shows its start', async () => {
    const notifier = new WebhookNotifier({ name: 'ops-hook', url: receiver.url });
    receiver.respondWith({ status: 500, body: 'x'.repeat(4 * 1024 * 1024) }, 1);
    const err = (await notifier.send(message([item()])).catch((e: unknown) => e)) as NotifyError;
    expect([err.code, err.retryable]).toEqual(['notify_server_error', true]);
    expect(err.message.length).toBeLessThan(400);
  });

  it('keeps nothing of its sends in a long-lived signal the send\'s signal is made from', async () => {
    const notifier = new WebhookNotifier({ name: 'ops-hook', url: receiver.url });
    const daemon = new AbortController();
    const attempt = AbortSignal.any([daemon.signal, new AbortController().signal]); // as the dispatcher makes it
    for (let i = 0; i < 30; i++) await notifier.send(message([item()]), attempt);
    expect(dependantSignals(daemon.signal)).toBe(1); // the attempt's own signal, nothing per send
  });

  it('a custom body replaces the format', async () => {
    const notifier = new WebhookNotifier({ name: 'h', url: receiver.url, renderBody: (m) => JSON.stringify({ text: `${m.items.length} alert(s)` }) });
    await notifier.send(message([item(), batteryItem]));
    expect(receiver.received[0]?.body).toEqual({ text: '2 alert(s)' });
  });

  it('refuses a URL that is not http(s) without echoing it', () => {
    expect(() => new WebhookNotifier({ name: 'h', url: 'ftp://example.com/s3cr3tPath123' })).toThrow(/url must be an http:\/\/ or https:\/\/ URL/);
    expect(() => new WebhookNotifier({ name: 'h', url: 'not a url s3cr3tPath123' })).not.toThrow(/s3cr3tPath123/);
  });
});
