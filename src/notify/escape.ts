/**
 * Escaping of text that comes from boxes (names, locations, serials) and from the gateway before it
 * is rendered in a notification. One place for every channel:
 *
 * - `cleanText`: the one sanitiser of src/text.ts (`safeText`): control characters, line separators
 *   and bidi overrides become visible escapes.
 * - `escapeHtml` (src/text.ts, shared with the dashboard): for e-mail HTML bodies and Telegram.
 * - `truncate` (src/text.ts): the one cut to a length, marked with `…`.
 * - `escapeMrkdwn`: for Slack mrkdwn (`&`, `<`, `>` as entities, as Slack prescribes; formatting
 *   characters neutralised where they could open or close formatting).
 */

import { safeText as cleanText } from '../text.js';

export { cleanText };

/** Zero-width space: invisible, and breaks Slack's pairing of formatting characters. */
const ZWSP = '\u200b';
const WORD = /[\p{L}\p{N}]/u;

/**
 * Escapes text for Slack mrkdwn. `&`, `<` and `>` become `&amp;`, `&lt;`, `&gt;` (so `<!channel>`
 * and `<http://x|label>` are shown, not interpreted). Slack has no escape for `*`, `_`, `~` and
 * `` ` ``; a formatting character between two letters or digits cannot format (`SN_0042` stays
 * as it is, so serials can be copied), and every other one gets a zero-width space on both sides,
 * which stops Slack from pairing it.
 */
export function escapeMrkdwn(text: string): string {
  const s = cleanText(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (c === '*' || c === '_' || c === '~' || c === '`') {
      const before = s[i - 1];
      const after = s[i + 1];
      const inWord = before !== undefined && after !== undefined && WORD.test(before) && WORD.test(after);
      out += inWord && c !== '`' ? c : `${ZWSP}${c}${ZWSP}`;
    } else {
      out += c;
    }
  }
  return out;
}

/** Characters Telegram's MarkdownV2 reserves (core.telegram.org/bots/api#markdownv2-style), and the backslash. */
const TELEGRAM_MARKDOWN_V2 = /[_*[\]()~`>#+\-=|{}.!\\]/g;

/** Escapes text for Telegram MarkdownV2: every reserved character gets a backslash. */
export function escapeTelegramMarkdownV2(text: string): string {
  return cleanText(text).replace(TELEGRAM_MARKDOWN_V2, (c) => `\\${c}`);
}

/** Markdown that Adaptive Cards (Teams) interpret in TextBlock and FactSet text. */
const CARD_MARKDOWN = /[\\*_[\]()`~<>#|]/g;

/**
 * Escapes text for an Adaptive Card TextBlock or Fact (Teams renders a subset of Markdown there):
 * inline markers get a backslash, a leading list or heading marker (`- `, `+ `, `1. `) is
 * escaped, and `{{` is broken with a zero-width space so that `{{DATE(...)}}` is not evaluated.
 */
export function escapeCardMarkdown(text: string): string {
  return cleanText(text)
    .replace(CARD_MARKDOWN, (c) => `\\${c}`)
    .replace(/^(\s*)([-+]|\d+\.)(?=\s)/, (_m, space: string, marker: string) => `${space}${marker.replace(/([-+.])$/, '\\$1')}`)
    .replace(/\{\{/g, `{${ZWSP}{`)
    .replace(/\}\}/g, `}${ZWSP}}`);
}
