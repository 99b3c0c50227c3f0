import { describe, expect, it } from 'vitest';
import { formatCsv, formatTable, terminalSafe } from '../../src/cli/output.js';
import { parseRange } from '../../src/cli/time-range.js';
import { readTime } from '../../src/time.js';

describe('table and CSV output', () => {
  it('never sends control characters, line separators or bidi overrides from box text to the terminal', () => {
    const hostile = 'Lobby\u001b[31m RED\nsecond line\u2028\u202egnp.exe';
    const table = formatTable(['NAME'], [[hostile]]);
    // eslint-disable-next-line no-control-regex
    expect(table).not.toMatch(/[\u001b\u2028\u202e]/);
    expect(table.trim().split('\n')).toHaveLength(2); // header + one row: the newline did not split it
    expect(table).toContain('Lobby\\x1b[31m RED\\x0asecond line\\u2028\\u202egnp.exe');
    const csv = formatCsv(['NAME'], [[hostile]]);
    expect(csv.trim().split('\n')).toHaveLength(2);
    expect(csv).not.toContain('\u001b');
  });

  it('aligns columns and quotes CSV cells with commas and quotes', () => {
    expect(formatTable(['A', 'B'], [['x', '1'], ['long', '2']])).toBe('A     B\nx     1\nlong  2\n');
    expect(formatCsv(['A'], [['a,"b"']])).toBe('A\n"a,""b"""\n');
    expect(terminalSafe('plain SN-0042')).toBe('plain SN-0042');
  });
});

describe('time arguments (one parser for the CLI and the API)', () => {
  it.each([
    ['2026-03-01', Date.UTC(2026, 2, 1)],
    ['2026-03-01T12:00:00Z', Date.UTC(2026, 2, 1, 12)],
    ['2026-03-01T12:00+02:00', Date.UTC(2026, 2, 1, 10)],
    ['2026-03-01T22:00', Date.UTC(2026, 2, 1, 22)], // no offset: UTC, never host-local time
    ['2026-03-01 22:00:30.5', Date.UTC(2026, 2, 1, 22, 0, 30, 500)],
  ])('accepts %s', (text, ms) => expect(readTime(text)).toEqual({ ok: true, ms }));

  it.each(['5', 'yesterday', '03/01/2026', '2026-02-30', '2026-03-01T25:00', '0001-01-01', '2100-01-01', '9'.repeat(300)])(
    'refuses %j (no guessing, nothing outside 2000..2100)',
    (text) => {
      expect(readTime(text).ok).toBe(false);
      expect(() => parseRange({ from: text }, Date.UTC(2026, 5, 1), '24h')).toThrow(/--from/);
    },
  );

  it('refuses a --since that is not a finite duration within the limit, naming it', () => {
    expect(() => parseRange({ since: `${'9'.repeat(400)}h` }, Date.UTC(2026, 5, 1), '24h')).toThrow(/--since: invalid duration/);
    expect(() => parseRange({ since: '4000d' }, Date.UTC(2026, 5, 1), '24h')).toThrow(/--since: .*longer than the limit of 3650d/);
  });
});
