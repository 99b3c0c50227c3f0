/**
 * Call health (docs/calls.md): ingestion of the gateway's calls into the calls repository, and
 * the facts the call rules judge. `createCallIngest` builds the cycle the app schedules on
 * `calls.schedule`, one per account (each reads its own gateway's calls).
 */
import type { Clock } from '../clock.js';
import type { CallsConfig, RuleConfig } from '../config/schema.js';
import { readCallFacts, type CallFacts } from '../rules/facts.js';
import type { GatewayClient } from '../gateway/types.js';
import type { Logger } from '../log.js';
import type { CallsRepo } from '../domain/calls.js';
import { numberHashKey } from './privacy.js';
import { runCallSync, type CallSyncResult } from './sync.js';

export { runCallSync, type CallSyncResult, type CallSyncOptions } from './sync.js';
export { hashNumber, maskNumber, numberHashKey } from './privacy.js';
export { readCallFacts, type CallFacts, type CallRuleFacts } from '../rules/facts.js';

export interface CallIngest {
  readonly repo: CallsRepo;
  /** One call-sync cycle; after a successful one the call rules' facts are read again. */
  run(signal?: AbortSignal): Promise<CallSyncResult>;
  /**
   * The call rules' facts from the last call sync, if it succeeded and is recent (read within
   * `maxAgeMs`); else null (call rules say unknown).
   */
  facts(): CallFacts | null;
  /**
   * Drops the facts (call rules say unknown until the next successful call sync). Replicas: called
   * when this process takes or loses the account's lease, so a replica that gets an account back
   * never judges it with what it knew before (another replica synced its calls meanwhile).
   */
  forget(): void;
}

export function createCallIngest(deps: {
  /** The account whose calls are read (with its client and key); the facts are of its boxes only. */
  account: string;
  config: CallsConfig;
  /** The configured rules (the call rules among them get their facts after each sync). */
  rules: readonly RuleConfig[];
  /** Where the calls are stored (the store's `calls`). */
  repo: CallsRepo;
  client: GatewayClient;
  secretKey: string;
  concurrency: number;
  clock: Clock;
  logger: Logger;
  /**
   * The gateway's clock minus ours (from the device poll's Date header; 0 if unknown): call
   * times are the gateway's, so the call rules measure windows and ages on its clock.
   */
  gatewayOffsetMs?: () => number;
  /** Read the details of every completed call for its recording (the archive is on). */
  wantRecordings?: boolean;
  /** Facts read longer ago than this (our clock) are not handed out: no call sync ran since (absent: no limit). */
  maxAgeMs?: number;
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
    wantRecordings: deps.wantRecordings ?? false,
    concurrency: deps.concurrency,
  };
  /** The facts and when they were read (our clock); null: none. */
  let facts: { value: CallFacts; readAt: number } | null = null;
  return {
    repo,
    async run(signal) {
      facts = null;
      const result = await runCallSync({ account: deps.account, client: deps.client, repo, clock: deps.clock, logger: deps.logger, options, hashKey, ...(signal && { signal }) });
      if (result.outcome === 'ok') {
        const readAt = deps.clock.now();
        facts = { value: await readCallFacts(repo, deps.rules, readAt + (deps.gatewayOffsetMs?.() ?? 0), { lookBackMs: config.catchUp, account: deps.account }), readAt };
      }
      return result;
    },
    facts: () => (facts === null || (deps.maxAgeMs !== undefined && deps.clock.now() - facts.readAt > deps.maxAgeMs) ? null : facts.value),
    forget: () => {
      facts = null;
    },
  };
}
