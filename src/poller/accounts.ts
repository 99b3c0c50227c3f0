/**
 * One gateway client, schedule and cycle per entry of `gateways:` (docs/configuration.md,
 * "Several accounts"): what each account's polling keeps between its cycles.
 */
import type { Clock } from '../clock.js';
import type { AccountConfig, Config } from '../config/index.js';
import { createGatewayClient } from '../gateway/client.js';
import type { Endpoint, GatewayClient, RequestEvent } from '../gateway/types.js';
import type { Logger } from '../log.js';
import { createHeartbeat, type Heartbeat } from './heartbeat.js';
import { RecordQuarantine } from './quarantine.js';
import { scheduleIntervalMs } from './scheduler.js';

/** One account's polling: its client, schedule and the state its cycles keep. */
export interface AccountRun {
  config: AccountConfig;
  client: GatewayClient;
  /** HTTP attempts of its client so far (a cycle records the difference). */
  requestCount: () => number;
  tickIntervalMs: number;
  cycleDeadlineMs: number;
  /** Its gateway clock's skew at the last cycle that told it. */
  skewMs: number | null;
  heartbeat: Heartbeat;
  /** Its logger (with its `account` when there are several). */
  logger: Logger;
  /** Records a device list may not hold, logged once per account (src/poller/quarantine.ts). */
  quarantine: RecordQuarantine;
}

export function createAccountRuns(o: {
  gateways: readonly AccountConfig[];
  timezone: string;
  /** Injected in tests: the first account's client; the others' are built from their configuration. */
  client?: GatewayClient;
  clock: Clock;
  logger: Logger;
  /** Every HTTP attempt of every account's client (the request metrics). */
  onRequest: (event: RequestEvent) => void;
}): AccountRun[] {
  const { clock, logger } = o;
  return o.gateways.map((account, i): AccountRun => {
    const counter = { requests: 0 };
    const client =
      i === 0 && o.client !== undefined
        ? o.client
        : createGatewayClient({
            baseUrl: account.baseUrl,
            secretKey: account.secretKey,
            timeoutMs: account.timeout,
            maxBodyBytes: camelEndpoints(account.maxBody),
            connections: Math.max(account.concurrency, 2),
            clock,
            onRequest: (e) => {
              counter.requests += 1;
              o.onRequest(e);
            },
          });
    const tickMs = scheduleIntervalMs(account.schedule, o.timezone);
    const accountLogger = o.gateways.length > 1 ? logger.child({ account: account.name }) : logger;
    return {
      config: account,
      client,
      requestCount: () => counter.requests,
      tickIntervalMs: tickMs,
      // A cycle ends before the next tick is due (what is not back by then waits for the next
      // cycle), but never before one request could have run to its timeout.
      cycleDeadlineMs: Math.max(Math.floor(tickMs * 0.9), account.timeout),
      skewMs: null,
      heartbeat: createHeartbeat(accountLogger),
      logger: accountLogger,
      quarantine: new RecordQuarantine(accountLogger),
    };
  });
}

/** An account's client for its calls, test calls and recordings; undefined for an account not configured, or not worked here now (replicas). */
export function clientsOf(accounts: readonly AccountRun[], holds: (account: string) => boolean): (account: string) => GatewayClient | undefined {
  const byAccount = new Map(accounts.map((a) => [a.config.name, a.client]));
  return (account) => (holds(account) ? byAccount.get(account) : undefined);
}

/** Polls further apart than this leave a gap in the history (no data) rather than "unchanged". */
export function maxGapMsOf(config: Pick<Config, 'gateways' | 'poll'>): number {
  return Math.max(5 * 60_000, 3 * Math.max(...config.gateways.map((a) => scheduleIntervalMs(a.schedule, config.poll.timezone))));
}

/** `gateway.max_body` (camelCase keys after config parsing) as the client's per-endpoint limits. */
function camelEndpoints(maxBody: Config['gateway']['maxBody']): Record<Endpoint, number> {
  return {
    device_list: maxBody.deviceList,
    device_details: maxBody.deviceDetails,
    call_list: maxBody.callList,
    call_details: maxBody.callDetails,
    make_call: maxBody.makeCall,
  };
}
