/**
 * The call metrics on the daemon's registry: call-sync cycles, list pages and details read,
 * calls added, and gaps left out (the figures the scheduler cannot see from the gateway requests),
 * each per account (`account` label: `default` for a single `gateway:`), like the poll's
 * per-account series: one account's failing call sync shows beside another's working one.
 */
import { Counter, type Registry } from 'prom-client';
import type { CallSyncResult } from './sync.js';

export interface CallMetrics {
  observeSync(account: string, result: CallSyncResult): void;
}

export function registerCallMetrics(registry: Registry): CallMetrics {
  const registers = [registry];
  const byAccount = ['account'] as const;
  const cycles = new Counter({ name: 'boxwatch_call_sync_cycles_total', help: 'Call-sync cycles by account and outcome (ok, failed).', labelNames: ['account', 'outcome'] as const, registers });
  const pages = new Counter({ name: 'boxwatch_call_sync_list_pages_total', help: 'Call-list pages read, by account.', labelNames: byAccount, registers });
  const details = new Counter({ name: 'boxwatch_call_sync_details_total', help: 'Call-details requests made by the call sync, by account.', labelNames: byAccount, registers });
  const added = new Counter({ name: 'boxwatch_calls_ingested_total', help: 'Calls new to the database, by account.', labelNames: byAccount, registers });
  const calls = new Counter({
    name: 'boxwatch_calls_total',
    help: 'Calls boxwatch learnt to be final, by box and status (completed, failed).',
    labelNames: ['serial', 'status'] as const,
    registers,
  });
  const gaps = new Counter({
    name: 'boxwatch_call_sync_gaps_skipped_total',
    help: 'Reads after a gap longer than calls.catch_up (the calls of the rest of the gap were not read), by account.',
    labelNames: byAccount,
    registers,
  });
  return {
    observeSync(account, r) {
      cycles.inc({ account, outcome: r.outcome });
      pages.inc({ account }, r.pages);
      details.inc({ account }, r.details);
      added.inc({ account }, r.added);
      if (r.gapSkipped) gaps.inc({ account });
      for (const c of r.ended) calls.inc({ serial: c.serial, status: c.status });
    },
  };
}
