/**
 * Gateway address and key for the call commands: `--gateway URL` / BOXWATCH_GATEWAY_URL
 * (default http://127.0.0.1:8080) and BOXWATCH_SECRET_KEY. Without a key, the simulator's
 * development key is used, but only for a loopback gateway address (a local simulator); any other
 * address needs the real key.
 */
import { Option } from 'commander';
import { terminalSafe } from './output.js';
import { UsageError } from '../errors.js';
import { createGatewayClient } from '../gateway/client.js';
import type { GatewayClient } from '../gateway/types.js';
import { DEV_KEY } from '../sim/simulator.js';

export const DEFAULT_GATEWAY_URL = 'http://127.0.0.1:8080';

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

export function gatewayOption(): Option {
  return new Option('--gateway <url>', `Gateway API base URL (env BOXWATCH_GATEWAY_URL, default ${DEFAULT_GATEWAY_URL})`);
}

export interface GatewaySettings {
  url: string;
  key: string;
}

/** Resolves the gateway URL and key; throws UsageError for a bad URL or a missing key. */
export function resolveGateway(flag: string | undefined, env: NodeJS.ProcessEnv): GatewaySettings {
  const raw = flag ?? (env.BOXWATCH_GATEWAY_URL || DEFAULT_GATEWAY_URL);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`invalid gateway URL "${raw}" (expected e.g. ${DEFAULT_GATEWAY_URL})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`invalid gateway URL "${raw}": use http:// or https://`);
  }
  const key = env.BOXWATCH_SECRET_KEY;
  if (key !== undefined && key !== '') return { url: raw, key };
  if (LOOPBACK_HOSTS.has(url.hostname)) return { url: raw, key: DEV_KEY };
  throw new UsageError(
    `BOXWATCH_SECRET_KEY is not set; it is required for the gateway at ${url.origin} (only a local simulator gets the development key)`,
  );
}

/** Runs `fn` with a client for `settings` and closes the client afterwards. */
export async function withGateway<T>(settings: GatewaySettings, fn: (client: GatewayClient) => Promise<T>): Promise<T> {
  const client = createGatewayClient({ baseUrl: settings.url, secretKey: settings.key });
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}


/** `2026-03-01 12:00:00Z`, or the text itself when it is not a timestamp. */
export function formatTimestamp(iso: string | undefined): string {
  if (iso === undefined) return '-';
  const t = Date.parse(iso);
  return Number.isNaN(t) ? terminalSafe(iso) : new Date(t).toISOString().replace('T', ' ').replace(/\.\d{3}Z$/, 'Z');
}

/** Parses a positive integer option, or throws UsageError naming the option. */
export function positiveInt(value: string, option: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) {
    throw new UsageError(`${option} must be a positive integer, got "${value}"`);
  }
  return Number(value);
}

export { terminalSafe };
