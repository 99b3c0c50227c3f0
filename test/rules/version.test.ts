import { describe, expect, it } from 'vitest';
import { compareVersions, globToRegExp, isVersion, matchesAny } from '../../src/rules/index.js';

describe('compareVersions', () => {
  it.each<[string, string, number]>([
    ['2.10.0', '2.9.3', 1],
    ['2.9.3', '2.10.0', -1],
    ['2.10.0', '2.10.0', 0],
    ['2.10', '2.10.0', 0],
    ['v2.10.0', '2.10.0', 0],
    ['3', '2.99.99', 1],
    ['2.10.0-rc1', '2.10.0', -1],
    ['2.10.0-rc2', '2.10.0-rc10', -1],
    ['2.10.0+build5', '2.10.0', 0],
    ['garbage', '1.0.0', -1],
    ['abc', 'abd', -1],
  ])('%s vs %s -> %i', (a, b, expected) => {
    expect(compareVersions(a, b)).toBe(expected);
    expect(compareVersions(b, a)).toBe(-expected || 0);
  });

  it('sorts a mixed list', () => {
    expect(['2.10.0', '2.9.3', '10.0', '2.9.10', '2.10.0-beta'].sort(compareVersions)).toEqual(['2.9.3', '2.9.10', '2.10.0-beta', '2.10.0', '10.0']);
  });

  it('knows what a version is', () => {
    expect(isVersion('2.10.0')).toBe(true);
    expect(isVersion('latest')).toBe(false);
  });
});

describe('serial globs', () => {
  it('matches whole serials with * and ?', () => {
    expect(globToRegExp('SN-*').test('SN-0001')).toBe(true);
    expect(globToRegExp('SN-*').test('XSN-0001')).toBe(false);
    expect(globToRegExp('SN-000?').test('SN-0001')).toBe(true);
    expect(globToRegExp('SN-000?').test('SN-00011')).toBe(false);
    expect(matchesAny('SN-0001', [])).toBe(false);
    expect(matchesAny('anything', ['*'])).toBe(true);
  });
});
