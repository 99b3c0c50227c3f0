import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NotifyError } from '../../src/notify/errors.js';
import { escapeCardMarkdown } from '../../src/notify/escape.js';
import { TEAMS_MAX_LISTED_ITEMS, TeamsNotifier, buildTeamsPayload, type CardElement, type TeamsPayload } from '../../src/notify/teams.js';
import { startHttpReceiver, type HttpReceiver } from '../helpers/http-receiver.js';
import { channelRig, deliverThrough429 } from './channel-rig.js';
import { T0, batteryItem, item, message, powerCut } from './fixtures.js';
import { collectChain } from './secrets.js';

/** The path of a Workflows webhook URL carries a signature (`sig=`): a secret. */
const WORKFLOW_PATH = '/workflows/abc123/triggers/manual/paths/invoke?api-version=1&sig=S1gnatur3S1gnatur3';

function texts(elements: CardElement[]): string[] {
  return elements.flatMap((e) =>
    e.type === 'TextBlock' ? [e.text] : e.type === 'FactSet' ? e.facts.flatMap((f) => [f.title, f.value]) : texts(e.items),
  );
}
const card = (p: TeamsPayload) => p.attachments[0].content;

describe('buildTeamsPayload (Workflows message with an Adaptive Card)', () => {
  it('the envelope Workflows expects, a heading coloured by severity, facts per alert', () => {
    const payload = buildTeamsPayload(message([batteryItem]), 'teams');
    expect(payload.type).toBe('message');
    expect(payload.attachments).toHaveLength(1);
    expect(payload.attachments[0]).toMatchObject({ contentType: 'application/vnd.microsoft.card.adaptive', contentUrl: null });
    expect(card(payload)).toMatchObject({ $schema: 'http://adaptivecards.io/schemas/adaptive-card.json', type: 'AdaptiveCard', version: '1.4' });
    const [heading, alert] = card(payload).body;
    expect(heading).toMatchObject({ type: 'TextBlock', text: '\\[FIRING\\] warning: box SN-0007 "Dock 2" battery 12% below 20%', weight: 'Bolder', color: 'Warning', wrap: true });
    expect(alert?.type).toBe('Container');
    const facts = texts([alert as CardElement]);
    expect(facts).toEqual(expect.arrayContaining(['Box', 'SN-0007 "Dock 2"', 'Location', 'Warehouse', 'Value', '12%', 'Threshold', 'below 20', 'Rule']));
    expect(card(buildTeamsPayload(message([item()]), 't')).body[0]).toMatchObject({ color: 'Attention' });
    expect(card(buildTeamsPayload(message([item({ status: 'resolved', resolvedAt: T0 + 1 })]), 't')).body[0]).toMatchObject({ color: 'Good' });
  });

  it('a big group lists the first boxes and summarises the rest', () => {
    const body = card(buildTeamsPayload(powerCut(60), 't')).body;
    expect(body.filter((e) => e.type === 'Container')).toHaveLength(TEAMS_MAX_LISTED_ITEMS);
    expect(texts(body).some((t) => t.startsWith(`…and ${60 - TEAMS_MAX_LISTED_ITEMS} more: SN-0021`))).toBe(true);
    expect(JSON.stringify(buildTeamsPayload(powerCut(2000), 't')).length).toBeLessThan(28_000);
  });

  it('box text is escaped for card Markdown: no bold, links, lists or date functions from a box name', () => {
    const hostile = '**pwn** [click](http://evil) {{DATE(2017-02-14T06:08:39Z)}}';
    const all = texts(card(buildTeamsPayload(message([item({ boxName: hostile, location: '- item' })]), 't')).body).join('\n');
    expect(all).not.toContain('**pwn**');
    expect(all).not.toContain('[click](');
    expect(all).not.toContain('{{');
    expect(all).toContain('\\*\\*pwn\\*\\* \\[click\\]\\(http://evil\\)');
    expect(escapeCardMarkdown('- item')).toBe('\\- item');
    expect(escapeCardMarkdown('1. item')).toBe('1\\. item');
    expect(escapeCardMarkdown('line\nsecond')).toBe('line\\\\x0asecond');
  });

  it('templates replace title and alert list', () => {
    const body = card(buildTeamsPayload(message([item()]), 't', { title: 'Custom *title*', body: 'one\ntwo' })).body;
    expect(texts(body)).toEqual(expect.arrayContaining(['Custom \\*title\\*', 'one\n\ntwo']));
    expect(body.some((e) => e.type === 'Container')).toBe(false);
  });
});

describe('TeamsNotifier against a real receiver', () => {
  let receiver: HttpReceiver;
  beforeEach(async () => {
    // Workflows answers 202 Accepted with an empty body.
    receiver = await startHttpReceiver({ path: WORKFLOW_PATH, ok: { status: 202, body: '' }, name: 'Teams' });
  });
  afterEach(async () => {
    await receiver.close();
  });

  it('posts the card; a 429 is retried after Retry-After', async () => {
    const rig = channelRig(new TeamsNotifier({ name: 'teams', webhookUrl: receiver.url }));
    await deliverThrough429(rig, receiver, message([item()]), 'teams');
    const [req] = receiver.received;
    expect(req?.headers['content-type']).toBe('application/json');
    expect((req?.body as TeamsPayload).attachments[0].contentType).toBe('application/vnd.microsoft.card.adaptive');
    expect(receiver.received).toHaveLength(1);
  });

  it('a 400 is given up and the signature in the URL is never shown', async () => {
    receiver.respondWith({ status: 400, body: `{"error":{"code":"InvalidRequestContent","message":"sig S1gnatur3S1gnatur3"}}` });
    const err = (await new TeamsNotifier({ name: 'teams', webhookUrl: receiver.url }).send(message([item()])).catch((e: unknown) => e)) as NotifyError;
    expect([err.code, err.retryable]).toEqual(['notify_rejected', false]);
    expect(collectChain(err).join('\n')).not.toContain('S1gnatur3S1gnatur3');
  });
});
