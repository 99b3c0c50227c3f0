/**
 * Showing a configuration: secrets redacted (`redactConfig`) and the effective configuration as
 * YAML in the file's own shape (`formatConfig`), which parses back to the same Config.
 */
import { stringify } from 'yaml';
import { snakeKeys } from './case.js';
import type { UnsetVariable } from './interpolate.js';
import { valueAt } from './paths.js';
import type { Config } from './schema.js';
import { DEFAULT_ACCOUNT } from '../box-id.js';
import { REDACTED, redactUrl } from '../redact.js';
import { sizeText } from '../size.js';

/** Keys (snake_case) whose values are durations in ms in Config and text in YAML. */
const DURATION_KEYS = new Set([
  'timeout',
  'details_every',
  'raw_retention',
  'rollup_retention',
  'for',
  'keep_firing_for',
  'max_age',
  'repeat_interval',
  'group_wait',
  'initial_backoff',
  'max_backoff',
  'safety_window',
  'catch_up',
  'stuck_after',
  'resend_interval',
  'window',
  'max_duration',
  'retention',
  'forget_after',
  'lease',
]);

/** Keys (snake_case) whose values are sizes in bytes in Config, written with a unit in YAML. */
const SIZE_KEYS = new Set(['device_list', 'device_details', 'call_list', 'call_details', 'make_call', 'bandwidth', 'max_size']);

/** A copy of the configuration that is safe to print or log: no secret key, passwords (database URLs too) or webhook URLs. */
export function redactConfig(config: Config): Config {
  return {
    ...config,
    gateway: { ...config.gateway, baseUrl: redactUrl(config.gateway.baseUrl), secretKey: REDACTED },
    gateways: config.gateways.map((a) => ({ ...a, baseUrl: redactUrl(a.baseUrl), secretKey: REDACTED })),
    http: config.http.adminToken === undefined ? config.http : { ...config.http, adminToken: REDACTED },
    storage: config.storage.url === undefined ? config.storage : { ...config.storage, url: redactUrl(config.storage.url) },
    notifiers: config.notifiers.map((n) => {
      switch (n.type) {
        case 'email':
          return { ...n, smtpUrl: redactUrl(n.smtpUrl) };
        case 'slack':
        case 'teams':
          return { ...n, webhookUrl: REDACTED };
        case 'webhook':
          return {
            ...n,
            url: redactUrl(n.url),
            ...(n.hmacSecret ? { hmacSecret: REDACTED } : {}),
            ...(n.headers ? { headers: Object.fromEntries(Object.keys(n.headers).map((k) => [k, REDACTED])) } : {}),
          };
        case 'alertmanager':
          return { ...n, url: redactUrl(n.url) };
        case 'pagerduty':
          return { ...n, routingKey: REDACTED };
        case 'ntfy':
          // The topic name is the password of a public ntfy topic.
          return { ...n, url: REDACTED, ...(n.token ? { token: REDACTED } : {}) };
        case 'telegram':
          return { ...n, botToken: REDACTED };
        default:
          return n;
      }
    }),
  };
}

/** Milliseconds as an exact duration text: 90_000 -> "1m30s", 0 -> "0s". */
export function durationText(ms: number): string {
  if (ms === 0) return '0s';
  const parts: string[] = [];
  let rest = ms;
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1_000], ['ms', 1]] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  return parts.join('');
}

/** Durations and sizes as a file writes them (`90d`, `256MiB`), not as numbers. */
function unitsToText(value: unknown, key?: string): unknown {
  if (typeof value === 'number' && key !== undefined && DURATION_KEYS.has(key)) return durationText(value);
  if (typeof value === 'number' && key !== undefined && SIZE_KEYS.has(key)) {
    const text = sizeText(value);
    return text === String(value) ? value : text; // a bare byte count stays a YAML number
  }
  if (key === 'window' && isCallWindow(value)) return value.calls ?? durationText(value.ms as number);
  if (Array.isArray(value)) return value.map((v) => unitsToText(v));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, unitsToText(v, k)]));
  }
  return value;
}

/** call_failure_rate's `window` as parsed: a number of calls or a duration. */
function isCallWindow(value: unknown): value is { calls: number | null; ms: number | null } {
  return value !== null && typeof value === 'object' && 'calls' in value && 'ms' in value;
}

/** calls_silent keeps its `for` (the silence) as silent_for, with the engine's for at 0: written back as `for`. */
function callsSilentAsWritten(rule: Record<string, unknown>): Record<string, unknown> {
  if (rule['kind'] !== 'calls_silent') return rule;
  const { silent_for: silentFor, ...rest } = rule;
  return { ...rest, for: silentFor };
}

/**
 * `gateway:` or `gateways:`, as a file would hold them (never both): one account named "default"
 * polled on poll.schedule is a single `gateway:`.
 */
function accountsAsWritten(config: Config): Record<string, unknown> {
  const { gateway, gateways, ...rest } = config;
  const only = gateways.length === 1 ? gateways[0] : undefined;
  if (only !== undefined && only.name === DEFAULT_ACCOUNT && only.schedule === config.poll.schedule) return { gateway, ...rest };
  return { gateways, ...rest };
}

/** The configuration as YAML in the file's shape (snake_case keys, durations and sizes as text). */
export function formatConfig(config: Config, options: { redact?: boolean; unset?: readonly UnsetVariable[] } = {}): string {
  const shown = options.redact === false ? config : redactConfig(config);
  const snake = snakeKeys(accountsAsWritten(shown)) as Record<string, unknown>;
  if (Array.isArray(snake['rules'])) snake['rules'] = (snake['rules'] as Record<string, unknown>[]).map(callsSilentAsWritten);
  const doc = unitsToText(snake) as Record<string, unknown>;
  // A field whose variable is not set holds a stand-in: show the reference instead.
  for (const { name, path } of options.unset ?? []) {
    const parent = valueAt(doc, path.slice(0, -1));
    if (parent !== null && typeof parent === 'object') (parent as Record<PropertyKey, unknown>)[path[path.length - 1] as PropertyKey] = `\${${name}} (not set)`;
  }
  const http = doc['http'] as { enabled: boolean } | undefined;
  if (http && !http.enabled) doc['http'] = false;
  return stringify(doc, { lineWidth: 0 });
}
