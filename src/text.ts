/**
 * Text that comes from boxes and the gateway (names, locations, firmware, serials, vendor
 * messages): the one sanitiser used wherever such text is rendered (CLI tables and `status`, the
 * console notifier, Slack, e-mail), and the caps on its length.
 *
 * - `safeText`: control characters (ESC sequences, newlines, NUL), line and paragraph separators
 *   and bidirectional overrides, embeddings, isolates and marks (which can make `gnp.exe` read as
 *   `exe.png`) become visible escapes such as `\x1b` or `\u202e`. Nothing else changes.
 * - `escapeHtml`: sanitised, then escaped for HTML (e-mail bodies, the dashboard's pages).
 * - `truncate`: cuts text longer than a cap and marks the cut (`…`, or TRUNCATED_MARK for the
 *   stored fields whose caps TEXT_CAPS documents, docs/reliability.md#bounds); `truncateBytes`
 *   the same for a cap in UTF-8 bytes.
 */

// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** Replaces every character that could alter a terminal or reorder text by a visible escape. */
export function safeText(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return code > 0xff ? `\\u${code.toString(16).padStart(4, '0')}` : `\\x${code.toString(16).padStart(2, '0')}`;
  });
}

const HTML_ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text made safe for HTML element content and quoted attribute values (sanitised first, see safeText). */
export function escapeHtml(text: string): string {
  return safeText(text).replace(/[&<>"']/g, (c) => HTML_ENTITIES[c] as string);
}

/** Ends a stored text that was cut to its cap (a reader must see that it was cut). */
export const TRUNCATED_MARK = '…[truncated]';

/** Caps (in UTF-16 code units) of the text fields boxwatch stores from the gateway. */
export const TEXT_CAPS = {
  /** device_name */
  name: 200,
  /** location */
  location: 200,
  /** firmware_version */
  firmware: 64,
  /** ip_address */
  ip: 64,
  /** serial_no: a longer serial is not cut (it is an identity) but set aside as a bad record */
  serial: 64,
  /** a vendor error message kept in errors, logs and the cycle record */
  message: 500,
} as const;

/** `text` if it fits in `max`, else its start followed by `mark`, `max` long in all; never splits a surrogate pair. */
export function truncate(text: string, max: number, mark = '…'): string {
  if (text.length <= max) return text;
  let end = Math.max(0, max - mark.length);
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}${mark}`;
}

/** `text` if its UTF-8 form fits in `maxBytes`, else its start followed by `mark`, within `maxBytes` in all (for limits in bytes). */
export function truncateBytes(text: string, maxBytes: number, mark = '…'): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  const room = maxBytes - Buffer.byteLength(mark);
  let end = Math.min(text.length, maxBytes);
  while (end > 0 && Buffer.byteLength(text.slice(0, end)) > room) end -= 1;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}${mark}`;
}
