/**
 * Gateway address and key for the call commands, like every command from the configuration file
 * (`--config`, BOXWATCH_CONFIG, ./boxwatch.yaml when it exists; only its `gateway`/`gateways`
 * sections are used). A single `gateway:` is overridden by `--gateway URL` / BOXWATCH_GATEWAY_URL
 * and BOXWATCH_SECRET_KEY. With no configuration file the address defaults to
 * http://127.0.0.1:8080; without any key the simulator's development key is used, but only for a
 * loopback gateway address (a local simulator); any other address needs the real key.
 *
 * With `gateways:` (several accounts) a call command works through one account's own address and
 * key (`--gateway` still overrides the address): the one named by `--account NAME` (or by the
 * `ACCOUNT/` of a box or call id), which is required when several are configured
 * (`pickAccount`). `accountClients` is the one way the call commands make an account's client.
 */
import { existsSync } from 'node:fs';
import { Option } from 'commander';
import { DEFAULT_CONFIG_PATH, loadConfig, resolveConfigPath, secretKeyProblem } from '../config/index.js';
import { terminalSafe } from './output.js';
import { UsageError } from '../errors.js';
import { createGatewayClient } from '../gateway/client.js';
import { BOX_FROM } from '../gateway/messages.js';
import type { GatewayClient } from '../gateway/types.js';
import { DEFAULT_ACCOUNT } from '../box-id.js';
import type { AccountConfig } from '../config/index.js';
import { DEV_KEY } from '../sim/dev-key.js';
import { formatTime } from '../time-format.js';

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
}

/** The configuration's accounts, when a file is named or ./boxwatch.yaml exists (else none). */
export function configuredAccounts(configFlag: string | undefined, env: NodeJS.ProcessEnv): readonly AccountConfig[] {
  const path = resolveConfigPath({ path: configFlag, env });
  if (path === DEFAULT_CONFIG_PATH && configFlag === undefined && !existsSync(path)) return [];
  return loadConfig({ path, env, uses: ['gateway', 'gateways'] }).config.gateways;
}

/** True for the accounts of a single `gateway:` section (or of no configuration): env and flags override it. */
function isSingleGateway(accounts: readonly AccountConfig[]): boolean {
  return accounts.length === 0 || (accounts.length === 1 && accounts[0]?.name === DEFAULT_ACCOUNT);
}

export function accountOption(): Option {
  return new Option('--account <name>', 'the account of gateways: to use (needed when several are configured)');
}

/**
 * The account a call command works for: `given` (--account, or the ACCOUNT/ of a box or call id;
 * `said` is how the user wrote it, for the message), which must be configured; without it the only
 * account. Several accounts and none given is a UsageError naming them: a call command never picks
 * one silently.
 */
export function pickAccount(accounts: readonly AccountConfig[], given: string | undefined, said = `--account ${given ?? ''}`): string {
  const names = accounts.length === 0 ? [DEFAULT_ACCOUNT] : accounts.map((a) => a.name);
  if (given !== undefined) {
    if (!names.includes(given)) throw new UsageError(`${terminalSafe(said)} is not an account of the configuration (accounts: ${names.join(', ')})`);
    return given;
  }
  if (names.length > 1) throw new UsageError(`--account is needed: the configuration has several accounts (${names.join(', ')})`);
  return names[0] as string;
}

/**
 * The address and key of `account` (undefined when it is not configured): of a single `gateway:`
 * as resolveGateway takes it, of an entry of `gateways:` its own (`--gateway` still overrides the address).
 */
export function accountSettings(accounts: readonly AccountConfig[], flags: GatewayFlags, env: NodeJS.ProcessEnv, account: string): GatewaySettings | undefined {
  if (isSingleGateway(accounts)) return account === DEFAULT_ACCOUNT ? resolveGateway(flags, env, accounts[0]) : undefined;
  const entry = accounts.find((a) => a.name === account);
  return entry === undefined ? undefined : checkedSettings(flags.gateway ?? entry.baseUrl, entry.secretKey);
}

/** One client per account, made at its first use (`clientOf`: undefined for an account not configured); `close` closes them all. */
export function accountClients(settingsOf: (account: string) => GatewaySettings | undefined): { clientOf(account: string): GatewayClient | undefined; close(): Promise<void> } {
  const clients = new Map<string, GatewayClient>();
  return {
    clientOf(account) {
      const known = clients.get(account);
      if (known !== undefined) return known;
      const settings = settingsOf(account);
      if (settings === undefined) return undefined;
      const client = createGatewayClient({ baseUrl: settings.url, secretKey: settings.key });
      clients.set(account, client);
      return client;
    },
    async close() {
      await Promise.all([...clients.values()].map((c) => c.close()));
    },
  };
}

/**
 * Resolves the URL and key of a single gateway (`configured`: the configuration's, if any); throws
 * UsageError for a bad URL or a missing key.
 */
export function resolveGateway(flags: GatewayFlags, env: NodeJS.ProcessEnv, configured: AccountConfig | undefined = configuredAccounts(flags.config, env)[0]): GatewaySettings {
  const raw = flags.gateway ?? (env.BOXWATCH_GATEWAY_URL || configured?.baseUrl || DEFAULT_GATEWAY_URL);
  return checkedSettings(raw, env.BOXWATCH_SECRET_KEY || configured?.secretKey);
}

/** `raw` checked as a gateway URL, with `key` (a loopback address without one: the development key). */
function checkedSettings(raw: string, key: string | undefined): GatewaySettings {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`invalid gateway URL "${raw}" (expected e.g. ${DEFAULT_GATEWAY_URL})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`invalid gateway URL "${raw}": use http:// or https://`);
  }
  if (key !== undefined && key !== '') {
    // A configured key was checked with the configuration; this is BOXWATCH_SECRET_KEY's turn.
    const problem = secretKeyProblem(key);
    if (problem !== undefined) throw new UsageError(`BOXWATCH_SECRET_KEY ${problem}`);
    return { url: raw, key };
  }
  if (LOOPBACK_HOSTS.has(url.hostname)) return { url: raw, key: DEV_KEY };
  throw new UsageError(
    `BOXWATCH_SECRET_KEY is not set; it is required for the gateway at ${url.origin} (only a local simulator gets the development key)`,
  );
}

export interface AccountFlags extends GatewayFlags {
  account?: string;
}

/**
 * Runs `fn` with the client of the account a call command works for (`pickAccount`: --account, or
 * the ACCOUNT/ of `id`, a box or call id as given), and closes the client afterwards.
 */
export async function withAccountGateway<T>(flags: AccountFlags, env: NodeJS.ProcessEnv, id: string | undefined, fn: (client: GatewayClient, account: string) => Promise<T>): Promise<T> {
  const named = id === undefined ? undefined : accountPart(id).account;
  if (flags.account !== undefined && named !== undefined && flags.account !== named) {
    throw new UsageError(`${terminalSafe(id ?? '')} is of account ${terminalSafe(named)}, not of --account ${terminalSafe(flags.account)}`);
  }
  const accounts = configuredAccounts(flags.config, env);
  const account = named === undefined ? pickAccount(accounts, flags.account) : pickAccount(accounts, named, `account ${named} (of ${id ?? ''})`);
  const clients = accountClients((name) => accountSettings(accounts, flags, env, name));
  try {
    return await fn(clients.clientOf(account) as GatewayClient, account);
  } finally {
    await clients.close();
  }
}

/**
 * An id given with its account, `ACCOUNT/ID` (as stored and shown elsewhere: src/box-id.ts), or a
 * bare id: its account (undefined for a bare one) and the part after it.
 */
export function accountPart(text: string): { account: string | undefined; rest: string } {
  const slash = text.indexOf('/');
  return slash < 0 ? { account: undefined, rest: text } : { account: text.slice(0, slash), rest: text.slice(slash + 1) };
}


/** A gateway timestamp in the readable form of every table (`2026-03-01 12:00:00 UTC`), or the text itself when it is not a timestamp. */
export function formatTimestamp(iso: string | undefined): string {
  if (iso === undefined) return '-';
  const t = Date.parse(iso);
  return Number.isNaN(t) ? terminalSafe(iso) : formatTime(t);
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
