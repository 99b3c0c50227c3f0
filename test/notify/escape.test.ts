import { describe, expect, it } from 'vitest';
import { cleanText, escapeMrkdwn } from '../../src/notify/escape.js';
import { HOSTILE } from './fixtures.js';
import { TRUNCATED_MARK, escapeHtml, truncate, truncateBytes } from '../../src/text.js';

const ZWSP = '\u200b';

describe('escapeHtml', () => {
  it('escapes markup and quotes', () => {
    expect(escapeHtml(`<script>alert("x")</script> & 'y'`)).toBe('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;');
  });

  it('leaves nothing of a hostile box name interpretable', () => {
    const out = escapeHtml(HOSTILE);
    expect(out).not.toMatch(/[<>"]/);
    expect(out).toBe('&lt;!channel&gt; *bold* _x_ &amp; &lt;http://evil|click&gt;');
  });
});

describe('escapeMrkdwn', () => {
  it('turns Slack control sequences into entities, so mentions and links are shown, not used', () => {
    const out = escapeMrkdwn(HOSTILE);
    expect(out).not.toContain('<');
    expect(out).not.toContain('>');
    expect(out).toContain('&lt;!channel&gt;');
    expect(out).toContain('&lt;http://evil|click&gt;');
    expect(out).toContain(' &amp; ');
  });

  it('neutralises formatting characters at word boundaries', () => {
    const out = escapeMrkdwn('*bold* _x_ ~strike~ `code`');
    // Every formatting character is fenced by zero-width spaces: no pair can form.
    for (const c of ['*', '_', '~', '`']) {
      for (const m of out.matchAll(new RegExp(`\\${c}`, 'g'))) {
        expect(out[m.index - 1]).toBe(ZWSP);
        expect(out[m.index + 1]).toBe(ZWSP);
      }
    }
    expect(out.replaceAll(ZWSP, '')).toBe('*bold* _x_ ~strike~ `code`');
  });

  it('keeps formatting characters inside words, so serials can be copied', () => {
    expect(escapeMrkdwn('SN_0042 a*b')).toBe('SN_0042 a*b');
  });

  it('removes control characters (no forged lines)', () => {
    expect(escapeMrkdwn('Lobby\n> quote')).toBe('Lobby\\x0a&gt; quote');
  });
});

describe('cleanText and truncate', () => {
  it('makes terminal escapes, newlines and bidi overrides visible (the one sanitiser of the CLI and every channel)', () => {
    expect(cleanText('a\u001b[2Jb\r\nc')).toBe('a\\x1b[2Jb\\x0d\\x0ac');
    expect(cleanText('invoice\u202egnp.exe \u2066x\u2069')).toBe('invoice\\u202egnp.exe \\u2066x\\u2069');
  });

  it('cuts with an ellipsis and never splits a surrogate pair', () => {
    expect(truncate('abcdef', 4)).toBe('abc…');
    expect(truncate('abc', 3)).toBe('abc');
    const cut = truncate('ab😀cd', 4);
    expect(cut).toBe('ab…');
  });

  it('one cut for every mark and unit: a stored field says [truncated], a byte limit counts UTF-8', () => {
    expect(truncate('x'.repeat(30), 20, TRUNCATED_MARK)).toBe(`${'x'.repeat(8)}${TRUNCATED_MARK}`);
    expect(truncateBytes('ééééé', 7)).toBe('éé…'); // 2 bytes each, the ellipsis 3
    expect(truncateBytes('ab😀cd', 6)).toBe('ab…');
    expect(truncateBytes('abc', 3)).toBe('abc');
  });
});
