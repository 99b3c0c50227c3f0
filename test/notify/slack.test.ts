import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NotifyError } from '../../src/notify/errors.js';
import {
  SLACK_COLOURS,
  SLACK_LIMITS,
  SlackNotifier,
  buildSlackPayload,
  type SlackBlock,
  type SlackPayload,
} from '../../src/notify/slack.js';
import { parseRetryAfter } from '../../src/retry-after.js';
import { SLACK_TEST_PATH, startSlackReceiver, type SlackReceiver } from '../helpers/slack-receiver.js';
import { HOSTILE, T0, batteryItem, item, message, powerCut } from './fixtures.js';
import { collectChain } from './secrets.js';

/** Fails the test when the payload breaks a Block Kit limit. */
function expectValidBlockKit(payload: SlackPayload): void {
  const all: SlackBlock[] = [...payload.blocks, ...payload.attachments.flatMap((a) => a.blocks)];
  expect(all.length).toBeLessThanOrEqual(SLACK_LIMITS.blocksPerMessage);
  for (const block of all) {
    if (block.type === 'header') {
      expect(block.text.type).toBe('plain_text');
      expect(block.text.text.length).toBeLessThanOrEqual(SLACK_LIMITS.headerText);
      expect(block.text.text.length).toBeGreaterThan(0);
    } else if (block.type === 'section') {
      expect(block.text !== undefined || (block.fields?.length ?? 0) > 0).toBe(true);
      expect(block.fields?.length ?? 0).toBeLessThanOrEqual(SLACK_LIMITS.fieldsPerSection);
      for (const f of block.fields ?? []) expect(f.text.length).toBeLessThanOrEqual(SLACK_LIMITS.fieldText);
      if (block.text) expect(block.text.text.length).toBeLessThanOrEqual(SLACK_LIMITS.sectionText);
    } else {
      expect(block.elements.length).toBeLessThanOrEqual(SLACK_LIMITS.contextElements);
    }
  }
  expect(payload.text.length).toBeGreaterThan(0);
}

/** Every mrkdwn text of the payload. */
function mrkdwnTexts(payload: SlackPayload): string[] {
  const all: SlackBlock[] = [...payload.blocks, ...payload.attachments.flatMap((a) => a.blocks)];
  const texts = [payload.text];
  for (const b of all) {
    if (b.type === 'section') texts.push(...[b.text, ...(b.fields ?? [])].filter((t) => t?.type === 'mrkdwn').map((t) => t?.text ?? ''));
    if (b.type === 'context') texts.push(...b.elements.map((e) => e.text));
  }
  return texts;
}

const fieldTexts = (payload: SlackPayload): string[] =>
  payload.attachments.flatMap((a) => a.blocks.flatMap((b) => (b.type === 'section' ? (b.fields ?? []).map((f) => f.text) : [])));

describe('Slack field limits after escaping', () => {
  it('text that escaping makes five times longer still fits every field, single and grouped', () => {
    const worst = '&'.repeat(3000);
    const hostile = item({ boxName: worst, location: worst, summary: worst, value: worst, threshold: worst });
    expectValidBlockKit(buildSlackPayload(message([hostile]), 'x'));
    expectValidBlockKit(buildSlackPayload(message(Array.from({ length: 12 }, (_, i) => item({ ...hostile, serial: `SN-${i}${'*'.repeat(500)}` }))), 'x'));
  });
});

describe('buildSlackPayload', () => {
  it('one alert: header, fields for box, location, since and rule, red for critical', () => {
    const payload = buildSlackPayload(message([item()]), 'ops-slack');
    expectValidBlockKit(payload);
    expect(payload.blocks).toEqual([{ type: 'header', text: { type: 'plain_text', text: '[FIRING] critical: box SN-0042 "Lobby" disconnected' } }]);
    expect(payload.attachments).toHaveLength(1);
    expect(payload.attachments[0]?.color).toBe(SLACK_COLOURS.critical);
    const fields = fieldTexts(payload);
    expect(fields).toContain('*Box*\nSN-0042 "Lobby"');
    expect(fields).toContain('*Location*\nBuilding A');
    expect(fields).toContain(`*Since*\n<!date^${T0 / 1000}^{date_short_pretty} {time}|2026-01-01 00:00:00 UTC>`);
    expect(fields).toContain('*Rule*\nbox-offline (disconnected, critical)');
  });

  it('value and threshold fields; warning is orange, info blue, resolved green', () => {
    const warning = buildSlackPayload(message([batteryItem]), 'ops-slack');
    expect(fieldTexts(warning)).toEqual(expect.arrayContaining(['*Value*\n12%', '*Threshold*\nbelow 20']));
    expect(warning.attachments[0]?.color).toBe(SLACK_COLOURS.warning);
    expect(buildSlackPayload(message([item({ severity: 'info' })]), 'x').attachments[0]?.color).toBe(SLACK_COLOURS.info);
    const resolved = buildSlackPayload(message([item({ status: 'resolved', resolvedAt: T0 + 60_000 })]), 'x');
    expect(resolved.attachments[0]?.color).toBe(SLACK_COLOURS.resolved);
    expect(resolved.blocks[0]).toMatchObject({ text: { text: '[RESOLVED] critical: box SN-0042 "Lobby" disconnected' } });
  });

  it('a 40-box power cut is one valid message that lists every box', () => {
    const payload = buildSlackPayload(powerCut(40), 'ops-slack');
    expectValidBlockKit(payload);
    expect(payload.blocks[0]).toMatchObject({ text: { text: '[FIRING] critical: 40 boxes disconnected' } });
    const fields = fieldTexts(payload);
    expect(fields).toHaveLength(40);
    for (let i = 1; i <= 40; i++) expect(fields.some((f) => f.startsWith(`*SN-${String(i).padStart(4, '0')}*`))).toBe(true);
  });

  it('a grouped line says each thing once: no value the summary already says, a value it does not say kept', () => {
    // What the disconnected rule writes: the state word as value, and a summary that starts with it.
    const offline = (serial: string) => item({ serial, boxName: `Box ${serial}`, location: undefined, value: 'disconnected', summary: 'disconnected (last seen 2025-12-31T23:55:00.000Z)' });
    const fields = fieldTexts(buildSlackPayload(message([offline('SN-0001'), offline('SN-0002'), batteryItem, item({ serial: 'SN-0003', location: undefined, summary: 'firmware differs', value: '3.4.1', threshold: 'as most boxes (3.4.2)' })]), 'ops-slack'));
    const since = `since <!date^${T0 / 1000}^{date_short_pretty} {time}|2026-01-01 00:00:00 UTC>`;
    expect(fields[0]).toBe(`*SN-0001* "Box SN-0001"\ndisconnected (last seen 2025-12-31T23:55:00.000Z) · ${since}`);
    expect(fields[2]).toBe(`*SN-0007* "Dock 2" · Warehouse\nbattery 12% below 20% · ${since}`);
    expect(fields[3]).toBe(`*SN-0003* "Lobby"\nfirmware differs · 3.4.1 / as most boxes (3.4.2) · ${since}`);
  });

  it('a very large group stays within the limits and summarises the boxes it cannot list', () => {
    const payload = buildSlackPayload(powerCut(300), 'ops-slack');
    expectValidBlockKit(payload);
    expect(fieldTexts(payload)).toHaveLength(50);
    const texts = mrkdwnTexts(payload).join('\n');
    expect(texts).toContain('…and 250 more: SN-0051, SN-0052');
    expect(texts).toContain('SN-0300');
    expect(JSON.stringify(payload).length).toBeLessThan(40_000);
  });

  it('firing and resolved items in one message get one attachment each', () => {
    const payload = buildSlackPayload(message([batteryItem, item({ status: 'resolved', resolvedAt: T0 + 60_000 })]), 'ops-slack');
    expectValidBlockKit(payload);
    expect(payload.attachments.map((a) => a.color)).toEqual([SLACK_COLOURS.warning, SLACK_COLOURS.resolved]);
    expect(payload.blocks[0]).toMatchObject({ text: { text: '[FIRING 1, RESOLVED 1] warning: 2 alerts' } });
  });

  it('box text cannot mention, link or format in mrkdwn', () => {
    for (const payload of [
      buildSlackPayload(message([item({ boxName: HOSTILE, location: HOSTILE })]), 'ops-slack'),
      buildSlackPayload(powerCut(3), 'ops-slack'),
    ]) {
      for (const text of mrkdwnTexts(payload)) {
        expect(text).not.toContain('<!channel>');
        expect(text).not.toContain('<http://evil');
        expect(text).not.toMatch(/(^|\s)\*bold\*/);
        expect(text).not.toMatch(/(^|\s)_x_/);
      }
      expect(mrkdwnTexts(payload).join('\n')).toContain('&lt;!channel&gt;');
    }
  });

  it('cuts a long header to 150 characters', () => {
    const payload = buildSlackPayload(message([item({ boxName: 'x'.repeat(400) })]), 'ops-slack');
    expectValidBlockKit(payload);
    const header = payload.blocks[0];
    expect(header?.type === 'header' && header.text.text.endsWith('…')).toBe(true);
  });

  it('test and delivery-failure messages', () => {
    const test = buildSlackPayload({ kind: 'test', items: [], createdAt: T0 }, 'ops-slack');
    expectValidBlockKit(test);
    expect(test.text).toBe('[TEST] boxwatch test notification');
    const failure = buildSlackPayload(
      { kind: 'delivery_failure', items: [], failures: [{ notifier: 'ops-mail', failingSince: T0, dead: 1, lastError: 'x' }], createdAt: T0 },
      'ops-slack',
    );
    expectValidBlockKit(failure);
    expect(mrkdwnTexts(failure).join('\n')).toContain('Notifications to "ops-mail" are failing since 2026-01-01 00:00:00 UTC: 1 message given up');
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates', () => {
    expect(parseRetryAfter('30', T0)).toBe(30_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:01:00 GMT', T0)).toBe(60_000);
    expect(parseRetryAfter(null, T0)).toBeUndefined();
    expect(parseRetryAfter('soon', T0)).toBeUndefined();
  });
});

describe('SlackNotifier over a real HTTP receiver', () => {
  let slack: SlackReceiver;
  const secretToken = SLACK_TEST_PATH.split('/').at(-1) as string;

  beforeAll(async () => {
    slack = await startSlackReceiver();
  });
  afterEach(() => {
    slack.reset();
  });
  afterAll(async () => {
    await slack.close();
  });

  const expectNoSecret = (err: unknown, url: string): void => {
    for (const text of collectChain(err)) {
      expect(text).not.toContain(url);
      expect(text).not.toContain(secretToken);
      expect(text).not.toContain(SLACK_TEST_PATH);
    }
  };

  it('posts the Block Kit payload as JSON', async () => {
    const before = slack.received.length;
    const msg = powerCut(40);
    await new SlackNotifier({ name: 'ops-slack', webhookUrl: slack.url }).send(msg);
    const [hook] = (await slack.waitFor(before + 1)).slice(before);
    expect(hook?.headers['content-type']).toContain('application/json');
    expect(hook?.body).toMatchObject(JSON.parse(JSON.stringify(buildSlackPayload(msg, 'ops-slack'))) as object);
  });

  it('classifies answers: 500 and 429 are retryable (429 with Retry-After), 404 is not', async () => {
    const notifier = new SlackNotifier({ name: 'ops-slack', webhookUrl: slack.url });
    slack.respondWith({ status: 500, body: 'internal_error' }, 1);
    const e500 = (await notifier.send(message([item()])).catch((e: unknown) => e)) as NotifyError;
    expect(e500).toBeInstanceOf(NotifyError);
    expect([e500.code, e500.retryable, e500.status]).toEqual(['notify_server_error', true, 500]);
    expect(e500.message).toBe('notifier "ops-slack": Slack answered HTTP 500: internal_error');

    slack.respondWith({ status: 429, body: 'rate_limited', headers: { 'retry-after': '30' } }, 1);
    const e429 = (await notifier.send(message([item()])).catch((e: unknown) => e)) as NotifyError;
    expect([e429.code, e429.retryable, e429.retryAfterMs]).toEqual(['notify_rate_limited', true, 30_000]);

    slack.respondWith({ status: 404, body: 'no_service' }, 1);
    const e404 = (await notifier.send(message([item()])).catch((e: unknown) => e)) as NotifyError;
    expect([e404.code, e404.retryable, e404.status]).toEqual(['notify_rejected', false, 404]);
    for (const err of [e500, e429, e404]) expectNoSecret(err, slack.url);

    // The next request goes through again.
    const before = slack.received.length;
    await notifier.send(message([item()]));
    expect(slack.received.length).toBe(before + 1);
  });

  it('a receiver that is down is retryable, and the error does not show the URL', async () => {
    const down = await startSlackReceiver();
    const url = down.url;
    await down.close();
    const err = (await new SlackNotifier({ name: 'ops-slack', webhookUrl: url }).send(message([item()])).catch((e: unknown) => e)) as NotifyError;
    expect([err.code, err.retryable]).toEqual(['notify_unreachable', true]);
    expect(err.message).toMatch(/^notifier "ops-slack": cannot reach the Slack webhook: .*ECONNREFUSED/);
    expectNoSecret(err, url);
  });

  it('a receiver that does not answer in time is a retryable timeout', async () => {
    slack.delay(5_000);
    const err = (await new SlackNotifier({ name: 'ops-slack', webhookUrl: slack.url, timeoutMs: 100 })
      .send(message([item()]))
      .catch((e: unknown) => e)) as NotifyError;
    expect([err.code, err.retryable]).toEqual(['notify_timeout', true]);
    expectNoSecret(err, slack.url);
  });

  it('a cancelled send is reported as aborted', async () => {
    slack.delay(5_000);
    const controller = new AbortController();
    const pending = new SlackNotifier({ name: 'ops-slack', webhookUrl: slack.url }).send(message([item()]), controller.signal);
    controller.abort();
    const err = (await pending.catch((e: unknown) => e)) as NotifyError;
    expect([err.code, err.retryable]).toEqual(['notify_aborted', true]);
  });

  it('a URL with credentials is refused without quoting it', async () => {
    const url = `http://hook:Pa55w0rdXYZ@127.0.0.1:${slack.port}${SLACK_TEST_PATH}`;
    const err = (await new SlackNotifier({ name: 'ops-slack', webhookUrl: url }).send(message([item()])).catch((e: unknown) => e)) as NotifyError;
    expect(err).toBeInstanceOf(NotifyError);
    expect(err.message).toMatch(/includes credentials$/);
    const dump = collectChain(err).join('\n');
    expect(dump).not.toContain('Pa55w0rdXYZ');
    expectNoSecret(err, url);
  });

  it('rejects a URL that is not http(s) without echoing it', () => {
    expect(() => new SlackNotifier({ name: 'x', webhookUrl: 'ftp://example.com/s3cr3tW3bh00kT0k3n' })).toThrow(/must be an http:\/\/ or https:\/\/ URL/);
    try {
      new SlackNotifier({ name: 'x', webhookUrl: 'not a url s3cr3tW3bh00kT0k3n' });
    } catch (err) {
      expect(collectChain(err).join('\n')).not.toContain('s3cr3tW3bh00kT0k3n');
    }
  });
});
