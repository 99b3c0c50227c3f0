/**
 * End to end over real protocols: simulator (HTTP) -> daemon -> SMTP server, Slack webhook
 * receiver and console. One FakeClock drives both the simulator and the daemon.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { slackMrkdwn, slackTexts, startRig, type Rig, type SlackBody } from './harness.js';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

/** A rig whose boxes are all connected and already polled once (no alerts yet). */
async function calmRig(options: Parameters<typeof startRig>[0] = {}): Promise<Rig> {
  const r = await startRig(options);
  r.sim.sim.fleet.apply(r.sim.sim.fleet.boxes, { kind: 'connect' });
  await r.cycle(0);
  expect(r.smtp.messages).toHaveLength(0);
  expect(r.slack.requests).toHaveLength(0);
  return r;
}

describe('alerting end to end', () => {
  it('a box disconnects: one firing email and one Slack message; it reconnects: one resolved of each', async () => {
    rig = await calmRig();
    const box = rig.sim.sim.fleet.boxes[2]!;
    // A name from the box that must be escaped wherever it is rendered.
    box.name = 'Lobby <B> & "East" *x*';
    rig.sim.sim.fleet.apply([box], { kind: 'disconnect' });
    await rig.cycle();

    expect(rig.smtp.messages).toHaveLength(1);
    const firing = rig.smtp.messages[0]!;
    expect(firing.subject).toMatch(/^\[FIRING\] critical: box BX-00003 "Lobby <B> & "East" \*x\*" disconnected/);
    expect(firing.to).toEqual(['ops@example.com']);
    expect(firing.text).toContain('Firing (1):');
    expect(firing.text).toContain(`FIRING critical box-offline: box ${box.serial}`);
    expect(firing.text).toContain(`(${box.location})`);
    expect(firing.html).toContain(`<td style="border:1px solid #ddd;padding:4px 8px">${box.serial}</td>`);
    expect(firing.html).toContain('Lobby &lt;B&gt; &amp; &quot;East&quot; *x*');
    expect(firing.html).not.toContain('<B>');
    expect(firing.html).toContain('#d0021b'); // critical colour

    expect(rig.slack.received).toHaveLength(1);
    const slack = rig.slack.received[0]!.body as SlackBody;
    expect(slack.blocks[0]).toMatchObject({ type: 'header', text: { type: 'plain_text' } });
    expect(slack.blocks[0]!.text!.text).toMatch(/^\[FIRING\] critical: box BX-00003/);
    expect(slack.attachments[0]!.color).toBe('#d0021b');
    const fields = slack.attachments[0]!.blocks.flatMap((b) => b.fields ?? []).map((f) => f.text);
    expect(fields).toContain('*Box*\nBX-00003 "Lobby &lt;B&gt; &amp; "East" \u200b*\u200bx\u200b*\u200b"');
    expect(fields).toContain(`*Location*\n${box.location.replace(/&/g, '&amp;')}`);
    expect(fields).toContain('*Value*\ndisconnected');
    expect(fields.some((f) => f.startsWith('*Since*\n<!date^'))).toBe(true);
    expect(fields).toContain('*Rule*\nbox-offline (disconnected, critical)');
    // mrkdwn is escaped; the header is plain_text, which Slack shows as it is.
    expect(slackMrkdwn(slack).join('\n')).not.toContain('<B>');
    expect(slack.text).toContain('Lobby &lt;B&gt; &amp;');

    expect(rig.console).toHaveLength(1);
    expect(rig.console[0]).toMatch(/^2026-03-01 12:00:30 UTC FIRING 1 · critical\n {2}FIRING {4}BX-00003 .* disconnected .*· box-offline, for 0s$/);

    await rig.cycle(); // still down: nothing new
    expect(rig.smtp.messages).toHaveLength(1);
    expect(rig.slack.requests).toHaveLength(1);
    expect(rig.console).toHaveLength(1);

    rig.sim.sim.fleet.apply([box], { kind: 'connect' });
    await rig.cycle();
    expect(rig.smtp.messages).toHaveLength(2);
    const resolved = rig.smtp.messages[1]!;
    expect(resolved.subject).toMatch(/^\[RESOLVED\] critical: box BX-00003 .* connected$/);
    expect(resolved.text).toContain('Resolved (1):');
    expect(resolved.text).toContain('fired 2026-03-01 12:00:30 UTC, resolved 2026-03-01 12:01:30 UTC (after 1m)');
    expect(resolved.html).toContain('#2eb67d');
    expect(rig.slack.received).toHaveLength(2);
    const slackResolved = rig.slack.received[1]!.body as SlackBody;
    expect(slackResolved.blocks[0]!.text!.text).toMatch(/^\[RESOLVED\]/);
    expect(slackResolved.attachments[0]!.color).toBe('#2eb67d');
    expect(slackTexts(slackResolved).some((t) => t.startsWith('*Fired → resolved*'))).toBe(true);
    expect(rig.console).toHaveLength(2);
    expect(rig.console[1]).toMatch(/^2026-03-01 12:01:30 UTC RESOLVED 1 · critical\n {2}RESOLVED {2}BX-00003 .*· box-offline, after 1m$/);

    await rig.cycle();
    expect(rig.smtp.messages).toHaveLength(2);
    expect(rig.slack.requests).toHaveLength(2);
  });

  it('a battery wavering around the threshold fires once and resolves once (hysteresis)', async () => {
    rig = await calmRig({
      yaml: 'rules:\n  - { name: battery-low, kind: low_battery, below: 20, clear_above: 25, severity: warning }\nalerting: { group_wait: 0s }',
    });
    const box = rig.sim.sim.fleet.boxes[4]!;
    const ours = (): number => rig!.smtp.messages.filter((m) => m.subject.includes(box.serial)).length;
    const others = rig.smtp.messages.length;
    // [battery level, messages about the box so far]: fires below 20, clears only above 25.
    const steps: [number, number][] = [[19, 1], [22, 1], [18, 1], [23, 1], [21, 1], [26, 2], [24, 2], [26, 2]];
    for (const [level, expected] of steps) {
      rig.sim.sim.fleet.apply([box], { kind: 'battery', level });
      await rig.cycle();
      expect(ours(), `after battery ${level}`).toBe(expected);
    }
    const mails = rig.smtp.messages.filter((m) => m.subject.includes(box.serial));
    expect(mails.map((m) => m.subject.slice(0, m.subject.indexOf(']') + 1))).toEqual(['[FIRING]', '[RESOLVED]']);
    expect(mails[0]!.subject).toContain('warning');
    expect(mails[0]!.text).toContain('value 19%');
    expect(mails[0]!.text).toContain('threshold');
    expect(rig.smtp.messages.length - others).toBe(2);

    const slack = rig.slack.received.filter((r) => JSON.stringify(r.body).includes(box.serial));
    expect(slack).toHaveLength(2);
    const firingFields = slackTexts(slack[0]!.body);
    expect(firingFields).toContain('*Value*\n19%');
    expect(firingFields.some((t) => t.startsWith('*Threshold*\n') && t.includes('20'))).toBe(true);
    expect((slack[0]!.body as SlackBody).attachments[0]!.color).toBe('#f2a900'); // warning
    expect((slack[1]!.body as SlackBody).blocks[0]!.text!.text).toMatch(/^\[RESOLVED\]/);
    expect(rig.console.filter((l) => l.includes(box.serial))).toHaveLength(2);
  });

  it('30 boxes disconnecting together give one grouped message per notifier after group_wait', async () => {
    rig = await calmRig({
      devices: 40,
      yaml: 'rules:\n  - { name: box-offline, kind: disconnected, severity: critical }\nalerting: { group_wait: 30s }',
    });
    const down = rig.sim.sim.fleet.boxes.slice(0, 30);
    rig.sim.sim.fleet.apply(down, { kind: 'disconnect' });
    await rig.cycle(10_000);
    // Within group_wait: nothing sent yet.
    expect(rig.smtp.messages).toHaveLength(0);
    expect(rig.slack.requests).toHaveLength(0);
    expect(rig.console).toHaveLength(0);
    await rig.cycle(10_000);
    expect(rig.smtp.messages).toHaveLength(0);
    await rig.cycle(20_000); // 30 s after the transitions

    expect(rig.smtp.messages).toHaveLength(1);
    const mail = rig.smtp.messages[0]!;
    expect(mail.subject).toMatch(/^\[FIRING\] critical: 30 boxes/);
    expect(mail.text).toContain('Firing (30):');
    for (const box of down) {
      expect(mail.text).toContain(`box ${box.serial} `);
      expect(mail.html).toContain(`>${box.serial}</td>`);
    }
    for (const box of rig.sim.sim.fleet.boxes.slice(30)) expect(mail.text).not.toContain(box.serial);

    expect(rig.slack.received).toHaveLength(1);
    const body = rig.slack.received[0]!.body as SlackBody;
    const text = slackTexts(body).join('\n');
    for (const box of down) expect(text).toContain(`*${box.serial}*`);
    // Block Kit limits: at most 50 blocks, at most 10 fields per section.
    const blocks = body.attachments.flatMap((a) => a.blocks);
    expect(blocks.length + body.blocks.length).toBeLessThanOrEqual(50);
    for (const b of blocks) expect((b.fields ?? []).length).toBeLessThanOrEqual(10);
    expect(body.blocks[0]!.text!.text.length).toBeLessThanOrEqual(150);

    expect(rig.console).toHaveLength(1); // one block: the header and one line per transition
    const block = (rig.console[0] as string).split('\n');
    expect(block[0]).toMatch(/ UTC FIRING 30 · critical$/);
    expect(block.slice(1).map((l) => /^ {2}FIRING {4}(\S+) /.exec(l)?.[1]).sort()).toEqual(down.map((b) => b.serial).sort());

    // They come back together: one grouped resolved message per notifier.
    rig.sim.sim.fleet.apply(down, { kind: 'connect' });
    await rig.cycle();
    await rig.cycle();
    expect(rig.smtp.messages).toHaveLength(2);
    expect(rig.smtp.messages[1]!.subject).toMatch(/^\[RESOLVED\] critical: 30 boxes/);
    expect(rig.slack.received).toHaveLength(2);
    expect(rig.console).toHaveLength(2);
    expect(rig.console[1]).toMatch(/ UTC RESOLVED 30 · critical\n/);
  });
});
