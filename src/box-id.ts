/**
 * Box ids across accounts (docs/configuration.md, "Several accounts"): the one place that builds,
 * splits and resolves the string a box is known by everywhere (the store, alert keys, silences,
 * acks, URLs, the CLI).
 *
 * A box of the account named `default` (what a single `gateway:` section is) keeps its bare
 * serial, so databases and outputs of a one-account set-up never change; a box of any other
 * account is `ACCOUNT/SERIAL`. The gateway's serials never hold a `/` (src/gateway/schemas.ts), so
 * the split on the first `/` is unambiguous. An account's fleet-level alerts (the gateway rules)
 * use the account's key with an empty serial: '' for `default`, `ACCOUNT/` for the others.
 *
 * A call is known the same way (`callKey`): the gateway's call id for `default`, `ACCOUNT/CALL_ID`
 * for the others (two accounts' gateways number their calls independently). The calls, test calls
 * and recordings stored carry these keys; a request to an account's gateway takes the part after
 * the account (`splitBoxKey(key).serial`).
 */

import { matchesAny } from './glob.js';

/** The account of a single `gateway:` section, and of every box stored before accounts existed. */
export const DEFAULT_ACCOUNT = 'default';

/** Account names: lowercase letters, digits, `-` and `_`, starting with a letter or digit. */
export const ACCOUNT_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** The id of `serial` of `account` (the bare serial for the default account). */
export function boxKey(account: string, serial: string): string {
  return account === DEFAULT_ACCOUNT ? serial : `${account}/${serial}`;
}

/** The id of the gateway's call `callId` of `account`, as stored (the bare call id for the default account). */
export function callKey(account: string, callId: string): string {
  return boxKey(account, callId);
}

/** The key of an account's fleet-level alerts (serial of the gateway rules): '' or `ACCOUNT/`. */
export function fleetKey(account: string): string {
  return boxKey(account, '');
}

/** True for the serial of a fleet-level alert (of any account), not of one box. */
export function isFleetKey(key: string): boolean {
  return key === '' || key.endsWith('/');
}

/** The account and the gateway's serial of a box id (or of a fleet key: serial ''). */
export function splitBoxKey(key: string): { account: string; serial: string } {
  const i = key.indexOf('/');
  return i < 0 ? { account: DEFAULT_ACCOUNT, serial: key } : { account: key.slice(0, i), serial: key.slice(i + 1) };
}

/** The account a box id or fleet key belongs to. */
export function accountOf(key: string): string {
  return splitBoxKey(key).account;
}

/** `items` split by the account of their box id or fleet key (`idOf`), in the order first seen. */
export function groupByAccount<T>(items: Iterable<T>, idOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const account = accountOf(idOf(item));
    const group = groups.get(account);
    if (group === undefined) groups.set(account, [item]);
    else group.push(item);
  }
  return groups;
}

/** What a serial given on the command line or in a URL names among the known box ids. */
export type BoxResolution = { kind: 'found'; key: string } | { kind: 'unknown' } | { kind: 'ambiguous'; candidates: string[] };

/**
 * Resolves `ACCOUNT/SERIAL` or a bare serial against the known box ids: an exact id wins; a bare
 * serial that is the serial of exactly one box (in any account) names that box; of several, it is
 * ambiguous (the candidates, sorted, to name in the error).
 */
export function resolveBoxId(input: string, known: Iterable<string>): BoxResolution {
  const candidates: string[] = [];
  for (const key of known) {
    if (key === input) return { kind: 'found', key };
    if (!input.includes('/') && splitBoxKey(key).serial === input) candidates.push(key);
  }
  if (candidates.length === 1) return { kind: 'found', key: candidates[0] as string };
  if (candidates.length === 0) return { kind: 'unknown' };
  return { kind: 'ambiguous', candidates: candidates.sort() };
}

/** One line for an ambiguous serial: which ids it could mean. */
export function ambiguityMessage(input: string, candidates: readonly string[]): string {
  return `serial ${input} is in several accounts: ${candidates.join(', ')} (write ACCOUNT/SERIAL)`;
}

/** How a fleet-level alert's "box" is shown: `gateway`, or `gateway (ACCOUNT)` outside "default". */
export function fleetLabel(key: string): string {
  return key === '' ? 'gateway' : `gateway (${accountOf(key)})`;
}

/**
 * True when globs (a rule's, a silence's or a notifier's `boxes`) select this box: by its id, or
 * by its bare serial (`BX-*` selects `acme/BX-1` too; `acme/*` only the boxes of acme).
 */
export function boxMatches(key: string, globs: readonly string[]): boolean {
  return matchesAny(key, globs) || (key.includes('/') && matchesAny(splitBoxKey(key).serial, globs));
}
