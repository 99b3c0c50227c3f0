/**
 * Notifier templates (src/notify/templates.ts) as a user writes them: YAML through the config
 * loader, notifiers built by from-config, messages delivered through the real dispatcher to real
 * local receivers. Proves the variables, the defaults, the config error for a template that does
 * not parse, the fallback (delivered, and reported) for one that fails at render, the sandbox, and
 * that box text stays escaped for each channel's markup inside templates.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { parseConfig } from '../../src/config/index.js';
import { ConfigError } from '../../src/errors.js';
import { notifiersFromConfig, type NotifierDeps } from '../../src/notify/from-config.js';
import { logTemplateFailure, type TemplateFailure } from '../../src/notify/templates.js';
import type { TelegramPayload } from '../../src/notify/telegram.js';
import type { TeamsPayload } from '../../src/notify/teams.js';
import type { Notifier } from '../../src/domain/notifications.js';
import { startHttpReceiver, type HttpReceiver } from '../helpers/http-receiver.js';
import { startSmtpReceiver, type SmtpReceiver } from '../helpers/smtp-receiver.js';
import { channelRig } from './channel-rig.js';
import { T0, batteryItem, item, message } from './fixtures.js';

/** Box text that is markup in every channel, with a control character and a quote. */
const NASTY = '<b>*Lobby*</b> _x_ [a](http://evil) & "q"\u001b[2J';

/** Builds the notifiers of a YAML `notifiers:` list. */
function notifiers(yaml: string, deps: NotifierDeps = {}): Notifier[] {
  const config = parseConfig(`gateway: { secret_key: "k" }\n${yaml}`, {});
  return notifiersFromConfig(config.notifiers, { externalUrl: config.http.externalUrl, ...deps });
}

function one(yaml: string, deps: NotifierDeps = {}): Notifier {
  const [n] = notifiers(yaml, deps);
  if (!n) throw new Error('no notifier');
  return n;
}

/** A console notifier's output for one message. */
async function consoleOutput(notifier: Notifier, m = message([item(), batteryItem])): Promise<string[]> {
  return (notifier.preview?.(m) ?? []).join('\n').split('\n');
}

describe('template variables', () => {
  it('group, alerts (value with unit, since, duration, dashboard link) and fleet', async () => {
    const n = one(
      `http: { external_url: "https://bw.example.com/ops/" }
notifiers:
  - name: c
    type: console
    title: "{{ status }} {{ severity }} {{ counts.firing }}/{{ counts.resolved }}/{{ counts.total }} fleet {{ fleet.connected }}/{{ fleet.boxes }} firing {{ fleet.firing_alerts }}"
    body: |
      {% for a in alerts %}{{ a.status }}|{{ a.rule }}|{{ a.kind }}|{{ a.serial }}|{{ a.name }}|{{ a.location }}|{{ a.value }}|{{ a.threshold }}|{{ a.since }}|{{ a.duration }}|{{ a.link }}
      {% endfor %}`,
      { fleet: () => ({ boxes: 40, connected: 38, disconnected: 2, firingAlerts: 3 }) },
    );
    const resolved = { ...batteryItem, status: 'resolved' as const, resolvedAt: T0 + 90_000 };
    const lines = await consoleOutput(n, message([item(), resolved]));
    expect(lines[0]).toBe('2026-01-01 00:05:00 UTC firing critical 1/1/2 fleet 38/40 firing 3');
    expect(lines[1]).toBe(
      'firing|box-offline|disconnected|SN-0042|Lobby|Building A|||2026-01-01 00:00:00 UTC|5m|https://bw.example.com/ops/boxes/SN-0042',
    );
    expect(lines[2]).toBe(
      'resolved|battery-low|low_battery|SN-0007|Dock 2|Warehouse|12%|below 20|2026-01-01 00:00:00 UTC|1m30s|https://bw.example.com/ops/boxes/SN-0007',
    );
  });

  it('no link without http.external_url; repeat and acknowledgement variables', async () => {
    const n = one(`notifiers:
  - name: c
    type: console
    body: "{% for a in alerts %}[{{ a.link }}] {{ a.status }} repeat={{ a.repeat }} ack={{ a.acked_by }}:{{ a.ack_comment }}{% endfor %}"`);
    const repeat = item({ status: 'repeat', ack: { by: 'alice', comment: 'on it', at: T0, until: null } });
    expect((await consoleOutput(n, message([repeat])))[1]).toBe('[] firing repeat=true ack=alice:on it');
  });
});

describe('defaults', () => {
  it('`default.title` and `default.body` are the built-in texts: in the text channels a template of just those sends what no template sends', () => {
    for (const type of ['ntfy', 'telegram']) {
      const target = type === 'ntfy' ? 'url: "https://ntfy.example.com/topic"' : 'bot_token: "123456:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"\n    chat_id: "1"';
      const [plain, templated] = notifiers(`notifiers:
  - name: plain
    type: ${type}
    ${target}
  - name: templated
    type: ${type}
    ${target}
    title: "{{ default.title }}"
    body: "{{ default.body }}"`);
      for (const m of [message([item({ boxName: NASTY }), batteryItem]), message([{ ...batteryItem, status: 'resolved', resolvedAt: T0 + 60_000 }])]) {
        // The notifier's name appears in no alert text, so the two must be byte for byte the same.
        expect(templated!.preview!(m)).toEqual(plain!.preview!(m));
      }
    }
  });

  it('only a title: the default lines follow it (console)', async () => {
    const n = one(`notifiers:
  - { name: c, type: console, title: "Ops: {{ counts.firing }} firing" }`);
    const lines = await consoleOutput(n);
    expect(lines).toEqual([
      '2026-01-01 00:05:00 UTC Ops: 2 firing',
      expect.stringMatching(/^ {2}FIRING +SN-0042 "Lobby" +disconnected/),
      expect.stringMatching(/^ {2}FIRING +SN-0007 "Dock 2" +battery 12% below 20%/),
    ]);
  });
});

describe('a template that does not parse is a configuration error', () => {
  it('names the notifier, the field and the line', () => {
    const yaml = `gateway: { secret_key: "k" }
notifiers:
  - { name: console, type: console }
  - name: ops-teams
    type: teams
    webhook_url: "https://example.com/hook"
    body: |
      hello
      {% for a in alerts %}
      {{ a.name | upcase }
      {% endfor %}`;
    let error: unknown;
    try {
      parseConfig(yaml, {});
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/notifiers\[1\]\.body \(notifier "ops-teams"\): template does not parse at line 3, column 1/);
  });

  it('an unknown filter and an unclosed tag are caught too', () => {
    for (const [template, pattern] of [
      ['{{ status | shell }}', /line 1, column 1: undefined filter: shell/],
      ['{% if status %}firing', /line 1, column 1: tag .*not closed/],
    ] as const) {
      expect(() => notifiers(`notifiers:\n  - { name: c, type: console, title: "${template}" }`)).toThrow(pattern);
    }
  });
});

describe('a template that fails at render time', () => {
  const yaml = `notifiers:
  - name: hook
    type: webhook
    url: "URL"
    title: "{% for i in (1..100000000) %}x{% endfor %}"
    body: '{"text": "{{ alerts[0].name }}"}'`;

  it('falls back to the default text, is reported, and the message is delivered', async () => {
    const receiver = await startHttpReceiver();
    try {
      const failures: TemplateFailure[] = [];
      const n = one(yaml.replace('URL', receiver.url).replace(/\n {4}body: .*/, ''), { onTemplateFailure: (f) => failures.push(f) });
      const rig = channelRig(n);
      await rig.deliver(message([item()]));
      expect(rig.outbox.of('hook')[0]?.state).toBe('delivered');
      const body = receiver.received[0]?.body as { alerts: { annotations: { summary: string } }[] };
      expect(body.alerts[0]?.annotations.summary).toBe('box SN-0042 "Lobby" disconnected');
      expect(failures).toEqual([{ notifier: 'hook', part: 'title', error: expect.stringMatching(/limit exceeded/) }]);
    } finally {
      await receiver.close();
    }
  });

  it('the daemon logs it as a warning naming the notifier and the template', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const n = one(
      `notifiers:
  - name: c
    type: console
    title: "{% for i in (1..100000000) %}x{% endfor %}"
    body: "{{ alerts[0].name }} is down"`,
      { onTemplateFailure: logTemplateFailure(pino({ level: 'info' }, sink)) },
    );
    const shown = n.preview!(message([item()]))[0]!.split('\n');
    expect(shown).toEqual(['2026-01-01 00:05:00 UTC FIRING 1 · critical', 'Lobby is down']); // the default title, the body template
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 40, notifier: 'c', template: 'title', msg: 'template failed to render; the default text is used' });
  });
});

describe('the sandbox', () => {
  it('no files, no prototypes, no JavaScript: include finds nothing, constructors are empty', async () => {
    const failures: TemplateFailure[] = [];
    const n = one(
      `notifiers:
  - name: c
    type: console
    title: "[{{ alerts.constructor }}][{{ alerts[0].name.constructor }}][{{ status.__proto__ }}][{{ alerts[0].constructor.name }}]"
    body: "{% include '/etc/passwd' %}"`,
      { onTemplateFailure: (f) => failures.push(f) },
    );
    const lines = await consoleOutput(n, message([item()]));
    expect(lines[0]).toBe('2026-01-01 00:05:00 UTC [][][][]');
    expect(lines.join('\n')).not.toMatch(/root:/);
    expect(lines[1]).toMatch(/^ {2}FIRING +SN-0042 "Lobby"/); // the body fell back to the default
    expect(failures.map((f) => f.part)).toEqual(['body']);
  });
});

describe('box text inside templates is escaped for each channel (real receivers)', () => {
  let receiver: HttpReceiver;
  let smtp: SmtpReceiver;
  beforeAll(async () => {
    receiver = await startHttpReceiver();
    smtp = await startSmtpReceiver();
  });
  afterAll(async () => {
    await receiver.close();
    await smtp.close();
  });

  const TITLE = 'title: "Box {{ alerts[0].name }}"';
  const BODY = 'body: "<i>at</i> {{ alerts[0].location }}"';

  async function deliver(yaml: string): Promise<unknown> {
    receiver.received.length = 0;
    const notifier = one(yaml);
    const rig = channelRig(notifier);
    await rig.deliver(message([item({ boxName: NASTY, location: NASTY })]));
    expect(rig.outbox.of(notifier.name)[0]?.state).toBe('delivered');
    return receiver.received[0]?.body;
  }

  it('telegram HTML: box text and template text are escaped, the markup is boxwatch\'s own', async () => {
    const p = (await deliver(`notifiers:
  - { name: tg, type: telegram, bot_token: "123456:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", chat_id: "1", api_url: "${receiver.url.replace(/\/$/, '')}", ${TITLE}, ${BODY} }`)) as TelegramPayload;
    expect(p.parse_mode).toBe('HTML');
    expect(p.text.split('\n')[0]).toBe('<b>Box &lt;b&gt;*Lobby*&lt;/b&gt; _x_ [a](http://evil) &amp; &quot;q&quot;\\x1b[2J</b>');
    expect(p.text).not.toContain('<b>*Lobby');
    expect(p.text).not.toContain('<i>');
    expect(p.text).not.toContain('\u001b');
  });

  it('telegram MarkdownV2: every reserved character of box text escaped', async () => {
    const p = (await deliver(`notifiers:
  - { name: tg, type: telegram, parse_mode: MarkdownV2, bot_token: "123456:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", chat_id: "1", api_url: "${receiver.url.replace(/\/$/, '')}", ${TITLE}, ${BODY} }`)) as TelegramPayload;
    const unescaped = p.text.replace(/\\./g, '').replace(/^\*|\*$/gm, '');
    expect(unescaped).not.toMatch(/[_*[\]()~`>#+\-=|{}.!]/);
  });

  it('slack: mrkdwn and mentions of box text are neutralised, the header is plain text', async () => {
    const p = (await deliver(`notifiers:
  - { name: sl, type: slack, webhook_url: "${receiver.url}", title: "{{ alerts[0].name }} <!channel>", ${BODY} }`)) as { blocks: { type: string; text?: { type: string; text: string } }[]; attachments: unknown };
    const header = p.blocks.find((b) => b.type === 'header');
    expect(header?.text).toMatchObject({ type: 'plain_text' });
    expect(header?.text?.text).not.toContain('\u001b');
    const sections = JSON.stringify(p.attachments);
    expect(sections).toContain('&lt;b&gt;');
    expect(sections).toContain('&lt;i&gt;at&lt;/i&gt;');
    expect(sections).not.toMatch(/<b>|<i>|<http|\\u001b/);
  });

  it('teams: card markdown of box text escaped', async () => {
    const p = (await deliver(`notifiers:
  - { name: tm, type: teams, webhook_url: "${receiver.url}", ${TITLE}, ${BODY} }`)) as TeamsPayload;
    const [heading, body] = p.attachments[0].content.body as { text: string }[];
    expect(heading?.text).toContain('\\*Lobby\\*');
    expect(heading?.text).toContain('\\[a\\]');
    expect(body?.text).toContain('\\_x\\_');
    expect(JSON.stringify(p)).not.toContain('\u001b');
  });

  it('webhook custom body: box text is JSON-escaped, so hostile quotes keep the body valid JSON', async () => {
    const p = await deliver(`notifiers:
  - name: wh
    type: webhook
    url: "${receiver.url}"
    body: '{"box": "{{ alerts[0].name }}", "where": "{{ alerts[0].location }}", "n": {{ counts.total }}}'`);
    expect(p).toEqual({ box: '<b>*Lobby*</b> _x_ [a](http://evil) & "q"\\x1b[2J', where: '<b>*Lobby*</b> _x_ [a](http://evil) & "q"\\x1b[2J', n: 1 });
  });

  it('email: the HTML part escapes box text and template text', async () => {
    const rig = channelRig(one(`notifiers:
  - { name: em, type: email, smtp_url: "${smtp.url()}", from: a@example.com, to: [b@example.com], ${TITLE}, ${BODY} }`));
    await rig.deliver(message([item({ boxName: NASTY, location: NASTY })]));
    expect(rig.outbox.of('em')[0]?.state).toBe('delivered');
    const mail = smtp.messages.at(-1)!;
    expect(mail.subject).toBe('Box <b>*Lobby*</b> _x_ [a](http://evil) & "q"\\x1b[2J');
    expect(mail.html).toContain('&lt;i&gt;at&lt;/i&gt; &lt;b&gt;*Lobby*&lt;/b&gt;');
    expect(mail.html).not.toContain('<b>*Lobby');
  });
});
