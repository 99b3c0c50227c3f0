/** Box ids across accounts (src/box-id.ts): built, split, resolved from what a person types, matched by globs. */
import { describe, expect, it } from 'vitest';
import { accountOf, boxKey, boxMatches, fleetKey, fleetLabel, isFleetKey, resolveBoxId, splitBoxKey } from '../src/box-id.js';

describe('box ids', () => {
  it('keeps bare serials for the account "default" and prefixes the others; the split gives both back', () => {
    expect(boxKey('default', 'BX-1')).toBe('BX-1');
    expect(boxKey('acme', 'BX-1')).toBe('acme/BX-1');
    expect(splitBoxKey('acme/BX-1')).toEqual({ account: 'acme', serial: 'BX-1' });
    expect(splitBoxKey('BX-1')).toEqual({ account: 'default', serial: 'BX-1' });
    expect(accountOf('globex/')).toBe('globex');
  });

  it("an account's fleet key (its gateway alerts) is never a box's id", () => {
    expect(fleetKey('default')).toBe('');
    expect(fleetKey('acme')).toBe('acme/');
    expect([isFleetKey(''), isFleetKey('acme/'), isFleetKey('acme/BX-1'), isFleetKey('BX-1')]).toEqual([true, true, false, false]);
    expect([fleetLabel(''), fleetLabel('acme/')]).toEqual(['gateway', 'gateway (acme)']);
  });

  it('resolves ACCOUNT/SERIAL, a bare serial of one account, and names the candidates of an ambiguous one', () => {
    const known = ['acme/BX-1', 'acme/BX-2', 'globex/BX-1', 'BX-9'];
    expect(resolveBoxId('globex/BX-1', known)).toEqual({ kind: 'found', key: 'globex/BX-1' });
    expect(resolveBoxId('BX-2', known)).toEqual({ kind: 'found', key: 'acme/BX-2' });
    expect(resolveBoxId('BX-9', known)).toEqual({ kind: 'found', key: 'BX-9' });
    expect(resolveBoxId('BX-1', known)).toEqual({ kind: 'ambiguous', candidates: ['acme/BX-1', 'globex/BX-1'] });
    expect(resolveBoxId('BX-3', known)).toEqual({ kind: 'unknown' });
    expect(resolveBoxId('initech/BX-1', known)).toEqual({ kind: 'unknown' });
  });

  it('globs select a box by its id or by its bare serial', () => {
    expect(boxMatches('acme/BX-1', ['BX-*'])).toBe(true);
    expect(boxMatches('acme/BX-1', ['acme/*'])).toBe(true);
    expect(boxMatches('globex/BX-1', ['acme/*'])).toBe(false);
    expect(boxMatches('BX-1', ['acme/*'])).toBe(false);
  });
});
