import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ConsoleNotifier, buildConsoleLines } from '../../src/notify/console.js';
import { createNotifier } from '../../src/notify/index.js';
import { buildEmail } from '../../src/notify/email.js';
import { buildSlackPayload } from '../../src/notify/slack.js';
import { T0, batteryItem, item, message, powerCut } from './fixtures.js';

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  return { stream, text: () => Buffer.concat(chunks).toString('utf8') };
}

describe('console channel', () => {
  it('one line per item with time, status, severity, rule, box, value, threshold and since', () => {
    expect(buildConsoleLines(message([batteryItem]), 'console')).toEqual([
      '2026-01-01 00:05:00 UTC FIRING warning battery-low: box SN-0007 "Dock 2" (Warehouse) battery 12% below 20%; value 12%; threshold below 20; since 2026-01-01 00:00:00 UTC (5m ago)',
    ]);
    expect(buildConsoleLines(message([item({ status: 'resolved', resolvedAt: T0 + 120_000 })]), 'console')).toEqual([
      '2026-01-01 00:05:00 UTC RESOLVED critical box-offline: box SN-0042 "Lobby" (Building A) disconnected; fired 2026-01-01 00:00:00 UTC, resolved 2026-01-01 00:02:00 UTC (after 2m)',
    ]);
    expect(buildConsoleLines(message([item({ status: 'repeat', silencedUntil: T0 + 60_000 })]), 'console')[0]).toContain(
      'STILL FIRING critical box-offline: box SN-0042 "Lobby" (Building A) disconnected; since 2026-01-01 00:00:00 UTC (5m ago); held back by a silence until 2026-01-01 00:01:00 UTC',
    );
  });

  it('a grouped message writes one line per box', async () => {
    const out = capture();
    await new ConsoleNotifier({ name: 'console', stream: out.stream }).send(powerCut(40));
    const lines = out.text().split('\n').filter(Boolean);
    expect(lines).toHaveLength(40);
    expect(lines[39]).toContain('box SN-0040 "Box 40" (Site B) disconnected');
  });

  it('box names cannot write escape sequences or extra lines to the terminal', async () => {
    const out = capture();
    await new ConsoleNotifier({ name: 'console', stream: out.stream }).send(message([item({ boxName: 'Lobby\u001b[2J\nFAKE LINE' })]));
    const text = out.text();
    expect(text).not.toContain('\u001b');
    expect(text.split('\n').filter(Boolean)).toHaveLength(1);
  });

  // Bidi overrides once passed through the console, Slack and e-mail (only `status` escaped them).
  it('bidi overrides, isolates and marks in box text are shown as escapes on every channel', async () => {
    const bidi = 'invoice\u202egnp.exe \u2066x\u2069\u200f';
    const hostile = message([item({ boxName: bidi, location: bidi })]);
    const out = capture();
    await new ConsoleNotifier({ name: 'console', stream: out.stream }).send(hostile);
    const email = buildEmail(hostile, 'ops-mail');
    const slack = JSON.stringify(buildSlackPayload(hostile, 'ops-slack'));
    for (const text of [out.text(), email.subject, email.text, email.html, slack]) {
      expect(text).not.toMatch(/[\u202a-\u202e\u2066-\u2069\u200e\u200f]/);
    }
    expect(out.text()).toContain('invoice\\u202egnp.exe');
    expect(email.subject).toContain('invoice\\u202egnp.exe');
  });

  it('test messages, and the factory', async () => {
    const out = capture();
    const notifier = createNotifier({ name: 'console', type: 'console' }, { stdout: out.stream });
    expect(notifier.type).toBe('console');
    await notifier.send({ kind: 'test', items: [], createdAt: T0 });
    expect(out.text()).toBe(
      '2026-01-01 00:00:00 UTC TEST This is a test notification sent at 2026-01-01 00:00:00 UTC through the notifier "console". If you can read it, the notifier works.\n',
    );
  });
});
