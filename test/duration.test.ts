import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration, tryParseDuration } from '../src/duration.js';

describe('durations', () => {
  it.each([
    ['30s', 30_000],
    ['5m', 300_000],
    ['2h', 7_200_000],
    ['7d', 604_800_000],
    ['1h30m', 5_400_000],
    ['500ms', 500],
    ['0', 0],
    ['0s', 0],
    ['1.5s', 1_500],
  ])('parses %s', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['5x', '', 'm', '10', '5m x', '-5m'])('rejects %j', (text) => {
    expect(tryParseDuration(text)).toBeUndefined();
    expect(() => parseDuration(text)).toThrow(/invalid duration/);
  });

  it('formats compactly', () => {
    expect(formatDuration(90_000)).toBe('1m30s');
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(93_784_000, { parts: 4 })).toBe('1d2h3m4s');
    expect(formatDuration(3 * 86_400_000 + 3_600_000 + 5000)).toBe('3d1h');
  });
});
