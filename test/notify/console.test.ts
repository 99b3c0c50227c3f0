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
  it('a header with the counts and the severity, then one short line per alert', () => {
    expect(buildConsoleLines(message([batteryItem]), 'console')).toEqual([
      '2026-01-01 00:05:00 UTC FIRING 1 · warning',
      '  FIRING    SN-0007 "Dock 2"  battery 12% below 20%  · battery-low, for 5m',
    ]);
    expect(buildConsoleLines(message([item({ status: 'resolved', resolvedAt: T0 + 120_000 }), batteryItem]), 'console')).toEqual([
      '2026-01-01 00:05:00 UTC FIRING 1, RESOLVED 1 · warning',
      '  RESOLVED  SN-0042 "Lobby"  disconnected  · box-offline, after 2m',
      '  FIRING    SN-0007 "Dock 2"  battery 12% below 20%  · battery-low, for 5m',
    ]);
    expect(buildConsoleLines(message([item({ status: 'repeat', silencedUntil: T0 + 60_000 })]), 'console')[1]).toBe(
      '  STILL FIRING  SN-0042 "Lobby"  disconnected  · box-offline, for 5m, held back by a silence until 2026-01-01 00:01:00 UTC',
    );
  });

  it('the value and threshold are not repeated after the summary', () => {
    const text = buildConsoleLines(message([batteryItem]), 'console').join('\n');
    expect(text).not.toMatch(/value|threshold/);
  });

  it('colours status and severity only when asked', () => {
    const coloured = buildConsoleLines(message([batteryItem]), 'console', { colour: true });
    expect(coloured[0]).toBe('2026-01-01 00:05:00 UTC \u001b[31mFIRING\u001b[0m 1 · \u001b[33mwarning\u001b[0m');
    expect(coloured[1]).toContain('\u001b[31mFIRING  \u001b[0m');
    expect(buildConsoleLines(message([batteryItem]), 'console').join('')).not.toContain('\u001b');
  });

  it('a grouped message is one block: a header and one line per box', async () => {
    const out = capture();
    await new ConsoleNotifier({ name: 'console', stream: out.stream }).send(powerCut(40));
    const lines = out.text().split('\n').filter(Boolean);
    expect(lines).toHaveLength(41);
    expect(lines[0]).toBe('2026-01-01 00:05:00 UTC FIRING 40 · critical');
    expect(lines[40]).toBe('  FIRING    SN-0040 "Box 40"  disconnected  · box-offline, for 5m');
  });

  it('box names cannot write escape sequences or extra lines to the terminal', async () => {
    const out = capture();
    await new ConsoleNotifier({ name: 'console', stream: out.stream }).send(message([item({ boxName: 'Lobby\u001b[2J\nFAKE LINE' })]));
    const text = out.text();
    expect(text).not.toContain('\u001b');
    expect(text.split('\n').filter(Boolean)).toHaveLength(2); // the header and the one alert
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

describe('gateway alerts of two accounts (issue 15)', () => {
  it('the e-mail subject and its text body name the account, so two accounts down read apart', () => {
    const down = (serial: string) => item({ rule: 'gateway_unreachable', serial, boxName: null, summary: 'gateway unreachable' });
    const acme = buildEmail(message([down('acme/')]), 'ops-mail');
    const globex = buildEmail(message([down('globex/')]), 'ops-mail');
    expect(acme.subject).toContain('gateway (acme): gateway unreachable');
    expect(globex.subject).toContain('gateway (globex): gateway unreachable');
    expect(acme.text).toContain('gateway (acme): gateway unreachable');
    expect(buildEmail(message([down('')]), 'ops-mail').subject).not.toContain('(');
  });
});
