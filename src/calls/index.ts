/**
 * Call health (docs/calls.md): ingestion of the gateway's calls into the calls repository.
 * `createCallIngest` builds the cycle the app schedules on `calls.schedule`.
 */
import type { Clock } from '../clock.js';
import type { CallsConfig } from '../config/schema.js';
import type { GatewayClient } from '../gateway/types.js';
import type { Logger } from '../log.js';
import type { CallsRepo } from '../store/calls-repo.js';
import { numberHashKey } from './privacy.js';
import { runCallSync, type CallSyncResult } from './sync.js';

export { runCallSync, type CallSyncResult, type CallSyncOptions } from './sync.js';
export { hashNumber, maskNumber, numberHashKey } from './privacy.js';

export interface CallIngest {
  readonly repo: CallsRepo;
  /** One call-sync cycle. */
  run(signal?: AbortSignal): Promise<CallSyncResult>;
}

export function createCallIngest(deps: {
  config: CallsConfig;
  /** Where the calls are stored (the store's `calls`). */
  repo: CallsRepo;
  client: GatewayClient;
  secretKey: string;
  concurrency: number;
  clock: Clock;
  logger: Logger;
}): CallIngest {
  const { config } = deps;
  const { repo } = deps;
  const hashKey = numberHashKey(deps.secretKey);
  const options = {
    perPage: config.perPage,
    maxRequests: config.maxRequests,
    safetyWindowMs: config.safetyWindow,
    catchUpMs: config.catchUp,
    stuckAfterMs: config.stuckAfter,
    storeNumbers: config.storeNumbers,
    storeTranscripts: config.storeTranscripts,
    wantRecordings: false,
    concurrency: deps.concurrency,
  };
  return {
    repo,
    run: (signal) =>
      runCallSync({ client: deps.client, repo, clock: deps.clock, logger: deps.logger, options, hashKey, ...(signal && { signal }) }),
  };
}
