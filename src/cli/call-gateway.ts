/**
 * Gateway address and key for the call commands, like every command from the configuration file
 * (`--config`, BOXWATCH_CONFIG, ./boxwatch.yaml when it exists; only its `gateway` or `gateways`
 * section is used: with several accounts, the one `account` names, src/box-id.ts), overridden by `--gateway URL` / BOXWATCH_GATEWAY_URL and BOXWATCH_SECRET_KEY. With no
 * configuration file the address defaults to http://127.0.0.1:8080; without any key the
 * simulator's development key is used, but only for a loopback gateway address (a local
 * simulator); any other address needs the real key.
 */
import { existsSync } from 'node:fs';
import { Option } from 'commander';
import { DEFAULT_CONFIG_PATH, loadConfig, resolveConfigPath } from '../config/index.js';
import { terminalSafe } from './output.js';
import { UsageError } from '../errors.js';
import { createGatewayClient } from '../gateway/client.js';
import { BOX_FROM } from '../gateway/messages.js';
import { splitBoxKey } from '../box-id.js';
import type { GatewayClient } from '../gateway/types.js';
import { DEV_KEY } from '../sim/dev-key.js';

export const DEFAULT_GATEWAY_URL = 'http://127.0.0.1:8080';

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

export function gatewayOption(): Option {
  return new Option('--gateway <url>', `Gateway API base URL (env BOXWATCH_GATEWAY_URL, default ${DEFAULT_GATEWAY_URL})`);
}

export function configOption(): Option {
  return new Option('-c, --config <file>', 'configuration file for the gateway address and key (default: $BOXWATCH_CONFIG, else ./boxwatch.yaml if it exists)');
}

export interface GatewaySettings {
  url: string;
  key: string;
}

export interface GatewayFlags {
  gateway?: string;
  config?: string;
  /** The account of `gateways:` (needed when there are several). */
  account?: string;
}

export function accountOption(): Option {
  return new Option('--account <name>', 'the account of gateways: in the configuration (needed when it has several)');
}

/** The configuration's gateway (of `account` with several accounts), when a file is named or ./boxwatch.yaml exists. */
function configuredGateway(configFlag: string | undefined, env: NodeJS.ProcessEnv, account: string | undefined): Partial<GatewaySettings> {
  const path = resolveConfigPath({ path: configFlag, env });
  if (path === DEFAULT_CONFIG_PATH && configFlag === undefined && !existsSync(path)) {
    if (account !== undefined) throw new UsageError(`--account ${terminalSafe(account)} needs a configuration file with gateways: (none at ${path})`);
    return {};
  }
  const { gateways } = loadConfig({ path, env, uses: ['gateway', 'gateways'] }).config;
  const names = gateways.map((g) => g.name).join(', ');
  if (account === undefined && gateways.length > 1) throw new UsageError(`--account is needed: the configuration has several accounts (${names})`);
  const gateway = account === undefined ? gateways[0] : gateways.find((g) => g.name === account);
  if (gateway === undefined) throw new UsageError(`--account ${terminalSafe(account ?? '')} is not an account of the configuration (accounts: ${names})`);
  return { url: gateway.baseUrl, key: gateway.secretKey };
}

/**
 * The account a box id or call key (`ACCOUNT/...`, src/box-id.ts) names, with `--account`: they
 * must agree (a UsageError otherwise); neither: none (the configuration's only account).
 */
export function accountNamed(key: string | undefined, flag: string | undefined): { account?: string } {
  const named = key?.includes('/') === true ? splitBoxKey(key).account : undefined;
  if (named !== undefined && flag !== undefined && named !== flag) throw new UsageError(`${terminalSafe(key ?? '')} is of account ${terminalSafe(named)}, not of --account ${terminalSafe(flag)}`);
  const account = named ?? flag;
  return account === undefined ? {} : { account };
}

/** Resolves the gateway URL and key; throws UsageError for a bad URL or a missing key. */
export function resolveGateway(flags: GatewayFlags, env: NodeJS.ProcessEnv): GatewaySettings {
  const configured = configuredGateway(flags.config, env, flags.account);
  const raw = flags.gateway ?? (env.BOXWATCH_GATEWAY_URL || configured.url || DEFAULT_GATEWAY_URL);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`invalid gateway URL "${raw}" (expected e.g. ${DEFAULT_GATEWAY_URL})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`invalid gateway URL "${raw}": use http:// or https://`);
  }
  const key = env.BOXWATCH_SECRET_KEY || configured.key;
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

/** The serial of `BX-00001` or `box:BX-00001` (how --from and --box name a box), or undefined. */
export function boxSerial(text: string): string | undefined {
  return BOX_FROM.exec(text.startsWith('box:') ? text : `box:${text}`)?.[1];
}

/** Parses a positive integer option, or throws UsageError naming the option. */
export function positiveInt(value: string, option: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) {
    throw new UsageError(`${option} must be a positive integer, got "${value}"`);
  }
  return Number(value);
}

export { terminalSafe };
