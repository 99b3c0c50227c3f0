/**
 * The HTTP `Retry-After` header (seconds, or an HTTP date) as milliseconds from `now`; undefined
 * when absent or unreadable. Used by the gateway client and the HTTP channels.
 */
export function parseRetryAfter(value: string | readonly string[] | null | undefined, now: number): number | undefined {
  const text = typeof value === 'string' ? value : (value?.[0] ?? undefined);
  if (text === undefined || text.trim() === '') return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
