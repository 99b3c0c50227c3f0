/**
 * The dashboard's HTTP side without a browser, over real HTTP against a daemon polling the
 * simulator: security and cache headers, the versioned assets (uPlot from node_modules), the path
 * prefix for a reverse proxy, the live event stream, the overview's filters and paging, and the
 * silence writes (token, Origin, validation as `silence add`).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boxPage } from '../../src/web/pages.js';
import { escapeHtml } from '../../src/text.js';
import { startRig, type Rig } from '../e2e/harness.js';

const TOKEN = 'server-test-admin-token-42';

async function get(url: string, init?: RequestInit): Promise<{ status: number; headers: Headers; text: string; json: () => unknown }> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) as unknown };
}

describe('dashboard over HTTP, behind a path prefix, with an admin token', () => {
  let rig: Rig;
  let base: string;

  beforeAll(async () => {
    rig = await startRig({ devices: 6, http: { adminToken: TOKEN, basePath: '/boxwatch/' } });
    await rig.cycle();
    base = `${rig.app.httpUrl as string}/boxwatch/`;
  });
  afterAll(() => rig?.close());

  it('serves every page under the prefix with links under it and strict security headers', async () => {
    for (const path of ['', 'uptime', 'firmware', 'alerts', 'silences', 'boxes/BX-00001']) {
      const res = await get(base + path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain('unsafe-inline');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
      expect(res.text).not.toMatch(/\sstyle=/); // no inline style
      for (const href of res.text.matchAll(/(?:href|src)="([^"]+)"/g)) {
        if (href[1] !== '#main') expect(href[1], path).toMatch(/^\/boxwatch\//);
      }
    }
    // A proxy that strips the prefix works as well, and the API answers under the prefix.
    expect((await get(`${rig.app.httpUrl as string}/uptime`)).status).toBe(200);
    expect((await get(`${base}api/boxes`)).status).toBe(200);
    expect((await get(`${rig.app.httpUrl as string}/boxwatch`)).status).toBe(200);
    expect((await get(`${base}boxes/NOPE-1`)).status).toBe(404);
  });

  it('serves the assets under a content version, cached for a year, and uPlot from node_modules', async () => {
    const page = (await get(base)).text;
    const version = /\/assets\/([0-9a-f]{12})\//.exec(page)?.[1];
    expect(version).toBeDefined();
    const js = await get(`${base}assets/${version}/overview.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const uplot = await get(`${base}assets/${version}/vendor/uPlot.esm.js`);
    const dist = dirname(createRequire(import.meta.url).resolve('uplot'));
    expect(uplot.text).toBe(readFileSync(join(dist, 'uPlot.esm.js'), 'utf8'));
    const stale = await get(`${base}assets/000000000000/overview.js`);
    expect(stale.status).toBe(200);
    expect(stale.headers.get('cache-control')).toBe('no-cache');
    expect((await get(`${base}assets/${version}/../../package.json`)).status).toBe(404);
    expect((await get(`${base}assets/${version}/nope.js`)).status).toBe(404);
  });

  it('sends one event on the live stream after every poll cycle', async () => {
    const controller = new AbortController();
    const res = await fetch(`${base}events`, { signal: controller.signal });
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    const until = async (pattern: RegExp): Promise<void> => {
      while (!pattern.test(text)) text += decoder.decode((await reader.read()).value);
    };
    await until(/retry: \d+/);
    await rig.cycle();
    await until(/event: cycle\ndata: (.*)\n\n/);
    const data = JSON.parse(/event: cycle\ndata: (.*)\n\n/.exec(text)?.[1] ?? '{}') as { outcome: string; boxes: number; startedAt: string };
    expect(data).toEqual({ outcome: 'ok', boxes: 6, startedAt: new Date(rig.clock.now()).toISOString() });
    controller.abort();
  });

  it('filters and pages the overview on the server, and names a bad filter', async () => {
    const all = (await get(`${base}api/overview`)).json() as { counts: { total: number }; boxes: { serial: string }[]; matched: number };
    expect(all.counts.total).toBe(6);
    const page2 = (await get(`${base}api/overview?per=4&page=2`)).json() as { boxes: { serial: string }[]; pages: number; page: number };
    expect(page2).toMatchObject({ page: 2, pages: 2 });
    expect(page2.boxes.map((b) => b.serial)).toEqual(all.boxes.slice(4).map((b) => b.serial));
    const q = (await get(`${base}api/overview?q=bx-00003`)).json() as { boxes: { serial: string }[] };
    expect(q.boxes.map((b) => b.serial)).toEqual(['BX-00003']);
    const bad = await get(`${base}api/overview?state=sleepy`);
    expect(bad.status).toBe(400);
    expect(bad.json()).toMatchObject({ parameter: 'state' });
  });

  it('creates, previews and expires silences with the token only, checked as `silence add` checks them', async () => {
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      get(base + path, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, ...headers }, body: JSON.stringify(body) });
    expect((await post('api/silences', { boxes: ['BX-00001'], for: '1h', comment: 'x' }, { authorization: '' })).status).toBe(401);
    expect((await post('api/silences', { boxes: ['BX-00001'], for: '1h', comment: 'x' }, { origin: 'http://evil.example' })).status).toBe(403);
    const noRule = await post('api/silences', { rules: ['no-such-rule'], for: '1h', comment: 'x' });
    expect(noRule.status).toBe(400);
    expect(noRule.json()).toMatchObject({ message: expect.stringContaining('matches no configured rule') as string });
    expect((await post('api/silences', { boxes: ['BX-00001'], for: 'soon', comment: 'x' })).status).toBe(400);
    expect((await post('api/silences', { boxes: ['BX-00001'], for: '1h', comment: 'x', extra: 1 })).status).toBe(400);
    const sameOrigin = await post('api/silences', { boxes: ['BX-0000*'], for: '1h', comment: 'maintenance' }, { origin: rig.app.httpUrl as string });
    expect(sameOrigin.status).toBe(201);
    const { silence } = sameOrigin.json() as { silence: { id: string; state: string; createdBy: string } };
    expect(silence).toMatchObject({ state: 'active', createdBy: 'dashboard' });
    const listed = (await get(`${base}api/silences`)).json() as { writable: boolean; silences: { id: string }[] };
    expect(listed).toMatchObject({ writable: true, silences: [{ id: silence.id }] });
    expect((await get(`${base}api/silences/${silence.id}/expire`)).status).toBe(405);
    expect((await post(`api/silences/${silence.id}/expire`, {}, { authorization: 'Bearer nope-nope-nope-nope' })).status).toBe(401);
    expect((await post(`api/silences/${silence.id}/expire`, {})).json()).toEqual({ id: silence.id, expired: true });
    expect((await post('api/silences/nope/expire', {})).status).toBe(404);
    expect(((await get(`${base}api/silences`)).json() as { silences: unknown[] }).silences).toEqual([]);
  });

  it('previews the open alerts a silence would hold back', async () => {
    rig.sim.sim.fleet.apply(rig.sim.sim.fleet.boxes.filter((b) => b.serial === 'BX-00002'), { kind: 'disconnect' });
    await rig.cycle();
    const preview = (await get(`${base}api/silences/preview?boxes=BX-0000*`)).json() as { alerts: { rule: string; serial: string }[] };
    expect(preview.alerts).toEqual([expect.objectContaining({ rule: 'box-offline', serial: 'BX-00002' })]);
    const none = (await get(`${base}api/silences/preview?rules=box-offline&boxes=BX-00001`)).json() as { alerts: unknown[] };
    expect(none.alerts).toEqual([]);
  });
});

describe('dashboard without an admin token', () => {
  let rig: Rig;
  beforeAll(async () => {
    rig = await startRig({ devices: 2, http: {} });
    await rig.cycle();
  });
  afterAll(() => rig?.close());

  it('refuses writes and explains on the silences page how to turn them on', async () => {
    const url = rig.app.httpUrl as string;
    const res = await get(`${url}/api/silences`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer anything-at-all-here' }, body: '{}' });
    expect(res.status).toBe(403);
    expect(res.json()).toMatchObject({ error: 'writes_disabled' });
    const page = await get(`${url}/silences`);
    expect(page.text).toContain('Creating silences is turned off');
    expect(page.text).toContain('http.admin_token');
    expect(page.text).not.toContain('id="silence-form"');
    expect(((await get(`${url}/api/silences`)).json() as { writable: boolean }).writable).toBe(false);
  });
});

describe('pages', () => {
  it('escape text from outside in the HTML skeleton', () => {
    expect(escapeHtml(`<img src=x onerror="alert('1')">&`)).toBe('&lt;img src=x onerror=&quot;alert(&#39;1&#39;)&quot;&gt;&amp;');
    const html = boxPage({ base: '/', assets: 'v', gateway: { text: '<b>gw</b>', state: 'ok' } }, '<script>x</script>');
    expect(html).not.toContain('<script>x');
    expect(html).not.toContain('<b>gw');
    expect(html).toContain('data-serial="&lt;script&gt;x&lt;/script&gt;"');
  });
});
