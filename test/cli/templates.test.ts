/**
 * Templates from the outside, with the BUILT `boxwatch`: `notify-test --render` prints what each
 * notifier would send for the sample group (templates applied, nothing sent, no secret printed),
 * a template that fails at render is a warning and the default text; a template that does not
 * parse makes `check-config` (and every command that reads the config) exit 2 naming the notifier
 * and the line.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../e2e/build.js';
import { runBuilt } from '../helpers/cli-process.js';
import { startHttpReceiver, type HttpReceiver } from '../helpers/http-receiver.js';

const ROUTING_KEY = 'R0utingKeyR0utingKey0123456789ab';
const HOOK_TOKEN = 'HookT0kenHookT0ken';

let dir: string;
let receiver: HttpReceiver;

beforeAll(async () => {
  await ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-templates-'));
  receiver = await startHttpReceiver();
}, 120_000);
afterAll(async () => {
  await receiver.close();
  rmSync(dir, { recursive: true, force: true });
});

function configFile(name: string, notifiers: string): string {
  const path = join(dir, name);
  writeFileSync(path, `gateway: { secret_key: "k" }\nhttp: { external_url: "https://boxwatch.example.com/" }\nnotifiers:\n${notifiers}`);
  return path;
}

const env = { PAGERDUTY_ROUTING_KEY: ROUTING_KEY, HOOK_URL: '' };

describe('boxwatch notify-test --render', () => {
  it('prints each notifier\'s request for the sample group with its templates, sends nothing, shows no secret', async () => {
    const path = configFile(
      'render.yaml',
      `  - name: ops-hook
    type: webhook
    url: "\${HOOK_URL}"
    body: '{"text": "{{ counts.firing }} firing: {% for a in alerts %}{{ a.serial }} {{ a.name }} ({{ a.value }}) {{ a.link }}; {% endfor %}"}'
  - name: ops-pager
    type: pagerduty
    routing_key: "\${PAGERDUTY_ROUTING_KEY}"
    title: "{{ alerts[0].rule }} on {{ alerts[0].serial }} for {{ alerts[0].duration }}"
  - { name: console, type: console }
`,
    );
    const r = await runBuilt(['notify-test', '--render', '--config', path], { env: { ...env, HOOK_URL: `${receiver.url}?token=${HOOK_TOKEN}` } });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(receiver.requests).toHaveLength(0);
    expect(r.out + r.err).not.toContain(ROUTING_KEY);
    expect(r.out + r.err).not.toContain(HOOK_TOKEN);

    const sections = r.out.split(/^== /m).filter(Boolean);
    expect(sections.map((s) => s.split('\n')[0])).toEqual(['ops-hook (webhook) ==', 'ops-pager (pagerduty) ==', 'console (console) ==']);
    const hook = JSON.parse(sections[0]!.slice(sections[0]!.indexOf('\n'))) as { text: string };
    expect(hook.text).toBe(
      '2 firing: SN-0042 Lobby () https://boxwatch.example.com/boxes/SN-0042; SN-0007 Dock 2 (12%) https://boxwatch.example.com/boxes/SN-0007; SN-0113 Car park (-88 dBm) https://boxwatch.example.com/boxes/SN-0113; ',
    );
    // PagerDuty: one event per alert, the title template as each trigger's summary, the resolved one a resolve.
    const events = sections[1]!
      .slice(sections[1]!.indexOf('\n'))
      .trim()
      .split(/\n\n/)
      .map((e) => JSON.parse(e) as { event_action: string; routing_key: string; payload?: { summary: string } });
    expect(events.map((e) => e.event_action)).toEqual(['trigger', 'trigger', 'resolve']);
    expect(events.map((e) => e.payload?.summary)).toEqual(['box-offline on SN-0042 for 7m', 'battery-low on SN-0007 for 25m', undefined]);
    expect(events[0]!.routing_key).toBe('[redacted]');
    // No template: the console's default block.
    expect(sections[2]).toMatch(/UTC FIRING 2, RESOLVED 1 · critical\n {2}FIRING +SN-0042 "Lobby"/);
  });

  it('a template that fails at render: a warning on stderr and the default text', async () => {
    const path = configFile('failing.yaml', `  - { name: c, type: console, title: "{% for i in (1..100000000) %}x{% endfor %}", body: "{{ alerts.size }} alerts" }\n`);
    const r = await runBuilt(['notify-test', '--render', '--notifier', 'c', '--config', path]);
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/^warning: notifier "c": the title template failed to render \(memory alloc limit exceeded.*\); the default text is shown\n$/);
    expect(r.out).toMatch(/^== c \(console\) ==\n\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC FIRING 2, RESOLVED 1 · critical\n3 alerts\n$/);
  });
});

describe('a template that does not parse', () => {
  it('check-config exits 2 naming the notifier, the template and its line', async () => {
    const path = configFile(
      'broken.yaml',
      `  - { name: console, type: console }
  - name: ops-teams
    type: teams
    webhook_url: "https://example.com/hook"
    title: "ok"
    body: |
      {% for a in alerts %}
      {{ a.name }
      {% endfor %}
`,
    );
    for (const command of [['check-config'], ['notify-test', '--render']]) {
      const r = await runBuilt([...command, '--config', path]);
      expect(r.code).toBe(2);
      expect(r.err).toContain('notifiers[1].body (notifier "ops-teams"): template does not parse at line 2, column 1');
      expect(r.out).toBe('');
    }
  });
});
