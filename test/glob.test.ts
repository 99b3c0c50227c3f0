/** The one glob helper (src/glob.ts): what each form matches, and what a glob not well formed says. */
import { describe, expect, it } from 'vitest';
import { globProblem, isGlob, matchesGlob } from '../src/glob.js';

describe('globs', () => {
  it.each([
    ['BX-0000[37]', ['BX-00003', 'BX-00007'], ['BX-00001', 'BX-00037', 'BX-0000']],
    ['BX-0000[3-5]', ['BX-00003', 'BX-00004', 'BX-00005'], ['BX-00002', 'BX-00006', 'BX-0000-']],
    ['BX-0000[!3]', ['BX-00001', 'BX-0000a'], ['BX-00003', 'BX-0000']],
    ['BX-0000[^3]', ['BX-00001'], ['BX-00003']],
    ['BX-[a-c]*', ['BX-a', 'BX-c123'], ['BX-d', 'BX-A']],
    ['[]x]', [']', 'x'], ['[', 'y']],
    ['a[-b]', ['a-', 'ab'], ['ac']],
    ['a[.*]', ['a.', 'a*'], ['ab']],
    ['SN-00?', ['SN-001', 'SN-00x'], ['SN-0012', 'SN-00']],
    ['battery-*', ['battery-low', 'battery-'], ['Battery-low']],
    ['a.b+c', ['a.b+c'], ['aXbbc']],
  ])('%s', (glob, yes, no) => {
    expect(globProblem(glob)).toBeUndefined();
    for (const s of yes) expect(matchesGlob(s, glob), s).toBe(true);
    for (const s of no) expect(matchesGlob(s, glob), s).toBe(false);
  });

  it('a class left open or a range backwards is refused in one line that says where', () => {
    expect(globProblem('BX-0000[37')).toBe('glob "BX-0000[37": "[" at position 8 is not closed by "]" (a character class is [abc], [a-z] or [!x])');
    expect(globProblem('BX-[9-0]')).toBe('glob "BX-[9-0]": the range "9-0" is backwards');
    expect(globProblem('BX-[]')).toMatch(/is not closed/);
  });

  it('a glob stored before classes existed, not well formed now, still matches what it matched', () => {
    expect(matchesGlob('BX-[1', 'BX-[1')).toBe(true);
    expect(matchesGlob('BX-[1x', 'BX-[*')).toBe(true);
  });

  it('isGlob: a class makes a pattern', () => {
    expect(isGlob('BX-0000[37]')).toBe(true);
    expect(isGlob('BX-00003')).toBe(false);
  });
});
