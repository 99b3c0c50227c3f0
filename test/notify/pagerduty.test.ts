import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NotifyError } from '../../src/notify/errors.js';
import { PagerDutyNotifier, buildPagerDutyEvents, type PagerDutyEvent } from '../../src/notify/pagerduty.js';
import { startHttpReceiver, type HttpReceiver } from '../helpers/http-receiver.js';
import { channelRig, deliverThrough429 } from './channel-rig.js';
import { HOSTILE, T0, batteryItem, item, message } from './fixtures.js';
import { collectChain } from './secrets.js';

const ROUTING_KEY = 'R0UT1NGK3Y0123456789abcdefABCDEF';
/** PagerDuty's answer to an accepted event (developer docs, Events API v2: 202 Accepted). */
const ACCEPTED = { status: 202, body: '{"status":"success","message":"Event processed","dedup_key":"x"}' };

/**
 * PagerDuty as the receiver sees it: a trigger opens an incident unless one with that dedup_key
 * is open; a resolve closes it. Only the accepted (2xx) events count.
 */
function incidents(receiver: HttpReceiver): { opened: string[]; open: Set<string> } {
  const opened: string[] = [];
  const open = new Set<string>();
  for (const r of receiver.received) {
    const e = r.body as PagerDutyEvent;
    if (e.event_action === 'trigger' && !open.has(e.dedup_key)) {
      opened.push(e.dedup_key);
      open.add(e.dedup_key);
    }
    if (e.event_action === 'resolve') open.delete(e.dedup_key);
  }
  return { opened, open };
}

describe('buildPagerDutyEvents (Events API v2)', () => {
  it('a firing alert is a trigger with summary, source, mapped severity, timestamp and details', () => {
    const [e] = buildPagerDutyEvents(message([batteryItem]), 'pd', { routingKey: ROUTING_KEY });
    expect(e).toEqual({
      routing_key: ROUTING_KEY,
      event_action: 'trigger',
      dedup_key: expect.stringMatching(/^boxwatch-[0-9a-f]{16}$/) as string,
      client: 'boxwatch',
      payload: {
        summary: 'box SN-0007 "Dock 2" battery 12% below 20%',
        source: 'SN-0007',
        severity: 'warning',
        timestamp: '2026-01-01T00:00:00.000Z',
        component: 'SN-0007',
        group: 'Warehouse',
        class: 'low_battery',
        custom_details: expect.objectContaining({ rule: 'battery-low', serial: 'SN-0007', value: '12%', threshold: 'below 20' }) as Record<string, string>,
      },
    });
    for (const severity of ['critical', 'warning', 'info'] as const) {
      expect(buildPagerDutyEvents(message([item({ severity })]), 'pd', { routingKey: ROUTING_KEY })[0]?.payload?.severity).toBe(severity);
    }
  });

  it('firing, repeat and resolve of one alert share one dedup_key; another box has another', () => {
    const key = (i = item()): string | undefined => buildPagerDutyEvents(message([i]), 'pd', { routingKey: ROUTING_KEY })[0]?.dedup_key;
    const resolve = buildPagerDutyEvents(message([item({ status: 'resolved', resolvedAt: T0 + 1 })]), 'pd', { routingKey: ROUTING_KEY })[0];
    expect(resolve).toEqual({ routing_key: ROUTING_KEY, event_action: 'resolve', dedup_key: key(), client: 'boxwatch' });
    expect(key(item({ status: 'repeat' }))).toBe(key());
    expect(key(item({ serial: 'SN-0043' }))).not.toBe(key());
    // The box name is not part of the identity: a renamed box is the same alert.
    expect(key(item({ boxName: 'Renamed' }))).toBe(key());
  });

  it('a group is one event per alert; the summary is capped at 1024 characters', () => {
    const events = buildPagerDutyEvents(message([item(), batteryItem, item({ serial: 'SN-9', summary: 'x'.repeat(5000) })]), 'pd', { routingKey: ROUTING_KEY });
    expect(events).toHaveLength(3);
    expect(events[2]?.payload?.summary.length).toBe(1024);
    expect(buildPagerDutyEvents({ kind: 'test', items: [], createdAt: T0 }, 'pd', { routingKey: ROUTING_KEY })[0]?.payload?.severity).toBe('info');
  });
});

describe('PagerDutyNotifier against a real receiver', () => {
  let receiver: HttpReceiver;
  let url: string;
  beforeEach(async () => {
    receiver = await startHttpReceiver({ path: '/v2/enqueue', ok: ACCEPTED, name: 'PagerDuty' });
    url = receiver.url;
  });
  afterEach(async () => {
    await receiver.close();
  });

  it('posts each event as JSON to the Events API URL', async () => {
    await new PagerDutyNotifier({ name: 'pd', routingKey: ROUTING_KEY, url }).send(message([item({ boxName: HOSTILE })]));
    const [req] = receiver.received;
    expect(req?.headers['content-type']).toBe('application/json');
    expect((req?.body as PagerDutyEvent).payload?.summary).toBe(`box SN-0042 "${HOSTILE}" disconnected`);
  });

  it('429 then success: backoff, and the resent trigger opens no second incident', async () => {
    const rig = channelRig(new PagerDutyNotifier({ name: 'pd', routingKey: ROUTING_KEY, url }));
    await deliverThrough429(rig, receiver, message([item()]), 'pd');
    expect(receiver.requests).toHaveLength(2);
    expect(incidents(receiver).opened).toHaveLength(1);
  });

  it('a 500 in the middle of a group: the message is retried whole, still one incident per alert, then resolved', async () => {
    const rig = channelRig(new PagerDutyNotifier({ name: 'pd', routingKey: ROUTING_KEY, url }));
    const group = [item(), item({ serial: 'SN-0043' }), item({ serial: 'SN-0044' })];
    // The first event is accepted, the second fails.
    receiver.respondWith({ status: 500, body: '{"status":"error"}' }, 1, 1);
    await rig.deliver(message(group));
    expect(receiver.requests).toHaveLength(2);
    expect(rig.outbox.of('pd')[0]).toMatchObject({ state: 'pending', attempts: 1 });
    await rig.retry();
    expect(rig.outbox.of('pd')[0]?.state).toBe('delivered');
    expect(receiver.received).toHaveLength(4);
    expect(incidents(receiver).opened).toHaveLength(3);
    // A repeat lands on the open incidents too.
    await rig.deliver(message(group.map((i) => ({ ...i, status: 'repeat' as const }))));
    expect(rig.outbox.of('pd')[1]?.state).toBe('delivered');
    expect(incidents(receiver).opened).toHaveLength(3);
    await rig.deliver(message(group.map((i) => ({ ...i, status: 'resolved' as const, resolvedAt: T0 + 60_000 }))));
    expect(incidents(receiver).open.size).toBe(0);
    expect(incidents(receiver).opened).toHaveLength(3);
  });

  it('400 (invalid event) is given up; the routing key never appears in errors', async () => {
    receiver.respondWith({ status: 400, body: `{"status":"invalid event","errors":["bad routing_key ${ROUTING_KEY}"]}` });
    const err = (await new PagerDutyNotifier({ name: 'pd', routingKey: ROUTING_KEY, url }).send(message([item()])).catch((e: unknown) => e)) as NotifyError;
    expect([err.code, err.retryable]).toEqual(['notify_rejected', false]);
    expect(err.message).toContain('PagerDuty answered HTTP 400');
    expect(collectChain(err).join('\n')).not.toContain(ROUTING_KEY);
  });
});
