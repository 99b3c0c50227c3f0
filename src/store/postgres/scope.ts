/**
 * A cycle's scope (CycleScope, src/alerts/repositories.ts) as a SQL condition, so that a cycle
 * reads only its accounts' rows: the same accounts `inScope` keeps.
 */
import { DEFAULT_ACCOUNT } from '../../box-id.js';
import type { CycleScope } from '../../alerts/repositories.js';

/** The account of a box id or fleet key in column `serial`, in SQL (accountOf of src/box-id.ts). */
export function accountOfSql(serial: string): string {
  return `CASE WHEN strpos(${serial}, '/') = 0 THEN '${DEFAULT_ACCOUNT}' ELSE split_part(${serial}, '/', 1) END`;
}

/** `account` (an SQL expression) within the scope, with parameters numbered from `first`. */
export function scopeSql(scope: CycleScope, account: string, first: number): { sql: string; params: unknown[] } {
  return scope.alsoNotIn === undefined
    ? { sql: `${account} = $${first}`, params: [scope.account] }
    : { sql: `(${account} = $${first} OR NOT (${account} = ANY($${first + 1}::text[])))`, params: [scope.account, scope.alsoNotIn] };
}
