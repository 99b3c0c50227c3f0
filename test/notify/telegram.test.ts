import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NotifyError } from '../../src/notify/errors.js';
import { escapeTelegramMarkdownV2 } from '../../src/notify/escape.js';
import { TelegramNotifier, buildTelegramPayload, telegramRetryAfter, type TelegramPayload } from '../../src/notify/telegram.js';
import { startHttpReceiver, type HttpReceiver } from '../helpers/http-receiver.js';
import { channelRig } from './channel-rig.js';
import { batteryItem, item, message, powerCut } from './fixtures.js';
import { collectChain } from './secrets.js';

const TOKEN = '123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw';
const OK = { status: 200, body: '{"ok":true,"result":{"message_id":1}}' };

describe('buildTelegramPayload', () => {
  it('HTML: bold title, one line per alert, box text escaped, previews off', () => {
    const p = buildTelegramPayload(message([item({ boxName: '<b>x</b> & "y"' })]), 'tg', '-100123', 'HTML');
    expect(p).toMatchObject({ chat_id: '-100123', parse_mode: 'HTML', link_preview_options: { is_disabled: true } });
    expect(p.text.split('\n')[0]).toBe('<b>[FIRING] critical: box SN-0042 &quot;&lt;b&gt;x&lt;/b&gt; &amp; &quot;y&quot;&quot; disconnected</b>');
    expect(p.text).not.toContain('<b>x</b>');
  });

  it('MarkdownV2: every reserved character escaped, title in *bold*', () => {
    const p = buildTelegramPayload(message([batteryItem]), 'tg', '1', 'MarkdownV2');
    expect(p.text.split('\n')[0]).toBe('*\\[FIRING\\] warning: box SN\\-0007 "Dock 2" battery 12% below 20%*');
    expect(escapeTelegramMarkdownV2('_*[]()~`>#+-=|{}.!\\')).toBe('\\_\\*\\[\\]\\(\\)\\~\\`\\>\\#\\+\\-\\=\\|\\{\\}\\.\\!\\\\');
    // Outside the escapes only letters, digits, spaces and unreserved punctuation remain.
    const unescaped = p.text.replace(/\\./g, '').replace(/^\*|\*$/gm, '');
    expect(unescaped).not.toMatch(/[_*[\]()~`>#+\-=|{}.!]/);
  });

  it('stays within 4096 characters for a huge group, cut before escaping', () => {
    for (const mode of ['HTML', 'MarkdownV2'] as const) {
      const p = buildTelegramPayload(powerCut(500), 'tg', '1', mode);
      const visible = mode === 'HTML' ? p.text.replace(/<\/?b>/g, '').replace(/&(amp|lt|gt|quot|#39);/g, '_') : p.text.replace(/\\(.)/g, '$1');
      expect(visible.length).toBeLessThanOrEqual(4096);
    }
  });

  it('reads retry_after from a 429 answer', () => {
    expect(telegramRetryAfter('{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 17","parameters":{"retry_after":17}}')).toBe(17_000);
    expect(telegramRetryAfter('not json')).toBeUndefined();
  });
});

describe('TelegramNotifier against a real receiver (Bot API sendMessage)', () => {
  let receiver: HttpReceiver;
  beforeEach(async () => {
    receiver = await startHttpReceiver({ path: `/bot${TOKEN}/sendMessage`, ok: OK, name: 'Telegram' });
  });
  afterEach(async () => {
    await receiver.close();
  });

  it('posts to /bot<token>/sendMessage; a 429 with parameters.retry_after is honoured and sent once more', async () => {
    const rig = channelRig(new TelegramNotifier({ name: 'tg', botToken: TOKEN, chatId: '42', apiUrl: `http://127.0.0.1:${receiver.port}` }));
    receiver.respondWith({ status: 429, body: '{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 45","parameters":{"retry_after":45}}' }, 1);
    const start = rig.clock.now();
    await rig.deliver(message([item()]));
    expect(rig.outbox.of('tg')[0]?.nextAttemptAt).toBeGreaterThanOrEqual(start + 45_000);
    await rig.retry();
    expect(rig.outbox.of('tg')[0]?.state).toBe('delivered');
    expect(receiver.received).toHaveLength(1);
    expect((receiver.received[0]?.body as TelegramPayload).chat_id).toBe('42');
  });

  it('a 400 (unparsable entities) is given up; the token never shows', async () => {
    receiver.respondWith({ status: 400, body: `{"ok":false,"error_code":400,"description":"Bad Request: can't parse entities in bot${TOKEN}"}` });
    const err = (await new TelegramNotifier({ name: 'tg', botToken: TOKEN, chatId: '42', apiUrl: `http://127.0.0.1:${receiver.port}` }).send(message([item()])).catch((e: unknown) => e)) as NotifyError;
    expect([err.code, err.retryable]).toEqual(['notify_rejected', false]);
    expect(collectChain(err).join('\n')).not.toContain(TOKEN.split(':')[1]);
    await receiver.stop();
    const down = (await new TelegramNotifier({ name: 'tg', botToken: TOKEN, chatId: '42', apiUrl: `http://127.0.0.1:${receiver.port}` }).send(message([item()])).catch((e: unknown) => e)) as NotifyError;
    expect(down.code).toBe('notify_unreachable');
    expect(collectChain(down).join('\n')).not.toContain(TOKEN.split(':')[1]);
  });

  it('refuses a malformed bot token without echoing it', () => {
    expect(() => new TelegramNotifier({ name: 'tg', botToken: 'nope-s3cr3t', chatId: '1' })).toThrow(/bot_token does not look like a bot token/);
    expect(() => new TelegramNotifier({ name: 'tg', botToken: 'nope-s3cr3t', chatId: '1' })).not.toThrow(/s3cr3t/);
  });
});
