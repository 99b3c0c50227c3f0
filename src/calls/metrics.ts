/**
 * The call metrics on the daemon's registry: call-sync cycles, list pages and details read,
 * calls added, and gaps left out (the figures the scheduler cannot see from the gateway requests).
 */
import { Counter, type Registry } from 'prom-client';
import type { CallSyncResult } from './sync.js';

export interface CallMetrics {
  observeSync(result: CallSyncResult): void;
}

export function registerCallMetrics(registry: Registry): CallMetrics {
  const registers = [registry];
  const cycles = new Counter({ name: 'boxwatch_call_sync_cycles_total', help: 'Call-sync cycles by outcome (ok, failed).', labelNames: ['outcome'] as const, registers });
  const pages = new Counter({ name: 'boxwatch_call_sync_list_pages_total', help: 'Call-list pages read.', registers });
  const details = new Counter({ name: 'boxwatch_call_sync_details_total', help: 'Call-details requests made by the call sync.', registers });
  const added = new Counter({ name: 'boxwatch_calls_ingested_total', help: 'Calls new to the database.', registers });
  const calls = new Counter({
    name: 'boxwatch_calls_total',
    help: 'Calls boxwatch learnt to be final, by box and status (completed, failed).',
    labelNames: ['serial', 'status'] as const,
    registers,
  });
  const gaps = new Counter({
    name: 'boxwatch_call_sync_gaps_skipped_total',
    help: 'Reads after a gap longer than calls.catch_up: the calls of the rest of the gap were not read.',
    registers,
  });
  return {
    observeSync(r) {
      cycles.inc({ outcome: r.outcome });
      pages.inc(r.pages);
      details.inc(r.details);
      added.inc(r.added);
      if (r.gapSkipped) gaps.inc();
      for (const c of r.ended) calls.inc({ serial: c.serial, status: c.status });
    },
  };
}
