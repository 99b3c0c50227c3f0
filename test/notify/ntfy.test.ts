import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NotifyError } from '../../src/notify/errors.js';
import { NtfyNotifier, buildNtfyPayload, splitTopicUrl, type NtfyPayload } from '../../src/notify/ntfy.js';
import { startHttpReceiver, type HttpReceiver } from '../helpers/http-receiver.js';
import { channelRig, deliverThrough429 } from './channel-rig.js';
import { T0, batteryItem, item, message, powerCut } from './fixtures.js';
import { collectChain } from './secrets.js';

const TOKEN = 'tk_7eevizlsiwf9yi4uxsrs83r4352o0';

describe('buildNtfyPayload (publish as JSON)', () => {
  it('topic, title, one line per alert; priority and tag from severity', () => {
    const p = buildNtfyPayload(message([item()]), 'ntfy', 'boxwatch-x7k2');
    expect(p).toEqual({
      topic: 'boxwatch-x7k2',
      title: '[FIRING] critical: box SN-0042 "Lobby" disconnected',
      message: expect.stringContaining('FIRING critical box-offline: box SN-0042 "Lobby" (Building A) disconnected') as string,
      priority: 5,
      tags: ['rotating_light'],
    });
    expect(buildNtfyPayload(message([batteryItem]), 'n', 't')).toMatchObject({ priority: 4, tags: ['warning'] });
    expect(buildNtfyPayload(message([item({ severity: 'info' })]), 'n', 't')).toMatchObject({ priority: 3 });
    expect(buildNtfyPayload(message([item({ status: 'resolved', resolvedAt: T0 + 1 })]), 'n', 't')).toMatchObject({ priority: 2, tags: ['white_check_mark'] });
  });

  it('box text cannot add lines; a huge group stays under ntfy 4096-byte message limit', () => {
    const p = buildNtfyPayload(message([item({ boxName: 'A\nFIRING critical fake' })]), 'n', 't');
    expect(p.message.split('\n')).toHaveLength(1);
    const big = buildNtfyPayload(powerCut(500), 'n', 't');
    expect(Buffer.byteLength(big.message)).toBeLessThanOrEqual(3800);
    expect(big.message.endsWith('…')).toBe(true);
    const emoji = buildNtfyPayload(message([item({ summary: '🔋'.repeat(3000) })]), 'n', 't');
    expect(Buffer.byteLength(emoji.message)).toBeLessThanOrEqual(3800);
    expect(emoji.message).not.toMatch(/[\ud800-\udbff]…$/);
  });

  it('the topic URL names the server and the topic', () => {
    expect(splitTopicUrl('https://ntfy.sh/boxwatch-x7k2')).toEqual({ server: 'https://ntfy.sh/', topic: 'boxwatch-x7k2' });
    expect(splitTopicUrl('https://example.com/ntfy/alerts/')).toEqual({ server: 'https://example.com/ntfy/', topic: 'alerts' });
  });
});

describe('NtfyNotifier against a real receiver', () => {
  let receiver: HttpReceiver;
  beforeEach(async () => {
    receiver = await startHttpReceiver({ path: '/', ok: { status: 200, body: '{"id":"x","event":"message"}' }, name: 'ntfy' });
  });
  afterEach(async () => {
    await receiver.close();
  });

  it('publishes JSON to the server root with the token as Bearer; 429 waits for Retry-After', async () => {
    const rig = channelRig(new NtfyNotifier({ name: 'ntfy', url: `http://127.0.0.1:${receiver.port}/boxwatch-x7k2`, token: TOKEN }));
    await deliverThrough429(rig, receiver, message([batteryItem]), 'ntfy');
    const [req] = receiver.received;
    expect(req?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect((req?.body as NtfyPayload).topic).toBe('boxwatch-x7k2');
    expect((req?.body as NtfyPayload).priority).toBe(4);
  });

  it('without a token no Authorization header; errors never show token or topic', async () => {
    const open = new NtfyNotifier({ name: 'ntfy', url: `http://127.0.0.1:${receiver.port}/boxwatch-x7k2` });
    await open.send(message([item()]));
    expect(receiver.received[0]?.headers.authorization).toBeUndefined();
    receiver.respondWith({ status: 403, body: `{"error":"forbidden topic boxwatch-x7k2 token ${TOKEN}"}` });
    const err = (await new NtfyNotifier({ name: 'ntfy', url: `http://127.0.0.1:${receiver.port}/boxwatch-x7k2`, token: TOKEN }).send(message([item()])).catch((e: unknown) => e)) as NotifyError;
    expect([err.code, err.retryable]).toEqual(['notify_rejected', false]);
    const text = collectChain(err).join('\n');
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain('boxwatch-x7k2');
  });
});
