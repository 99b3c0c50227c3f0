/**
 * Durations as people write them in configuration and on the command line: `500ms`, `30s`, `5m`,
 * `2h`, `7d`, `1w`, and sums such as `1h30m`. `0` and `0s` are zero.
 */
const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/gy;

/** Parses a duration to milliseconds; returns undefined when the text is not a duration. */
export function tryParseDuration(text: string): number | undefined {
  const s = text.trim();
  if (s === '0') return 0;
  if (s === '') return undefined;
  PART.lastIndex = 0;
  let total = 0;
  let consumed = 0;
  for (let m = PART.exec(s); m !== null; m = PART.exec(s)) {
    total += Number(m[1]) * (UNIT_MS[m[2] as string] as number);
    consumed = PART.lastIndex;
  }
  return consumed === s.length ? Math.round(total) : undefined;
}

export function parseDuration(text: string): number {
  const ms = tryParseDuration(text);
  if (ms === undefined) throw new Error(`invalid duration "${text}" (use e.g. 30s, 5m, 2h, 7d)`);
  return ms;
}

/**
 * Formats milliseconds compactly, the largest `parts` units (default 2) rounded down:
 * 90_000 -> "1m30s", 93_784_000 -> "1d2h" (parts 2) or "1d2h3m4s" (parts 4), 0 -> "0s",
 * under a second -> "500ms". Every duration boxwatch writes for people goes through here.
 */
export function formatDuration(ms: number, options: { parts?: number } = {}): string {
  if (ms === 0) return '0s';
  if (ms < 1000) return `${Math.round(ms)}ms`;
  let rest = Math.round(ms / 1000);
  const parts: string[] = [];
  for (const [unit, size] of [['d', 86_400], ['h', 3_600], ['m', 60], ['s', 1]] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  return parts.slice(0, options.parts ?? 2).join('');
}
