/**
 * The configuration schema (zod). Keys are snake_case here, exactly as written in YAML, so that
 * validation errors name the path the user wrote (`poll.details_every`). Every object is strict:
 * an unknown key (a typo) is an error. The TypeScript type `Config` is the camelCase form of the
 * schema's output (see `Camelize`); durations are milliseconds there.
 */
import { z } from 'zod';
import { readDuration, tryParseDuration } from '../duration.js';
import { globProblem } from '../glob.js';
import { readSize } from '../size.js';
import { templateProblem } from '../liquid.js';
import { E164 } from '../phone.js';
import { ACCOUNT_NAME, DEFAULT_ACCOUNT } from '../box-id.js';
import { isCronExpression } from '../cron.js';

import { isArchiveRuleKind, isCallRuleKind, SEVERITIES, type RuleKind } from '../vocabulary.js';

export { GATEWAY_RULES, RULE_KINDS, SEVERITIES } from '../vocabulary.js';
export type { GatewayRuleName, RuleKind, Severity } from '../vocabulary.js';

export const NOTIFIER_TYPES = ['email', 'slack', 'console', 'webhook', 'alertmanager', 'pagerduty', 'teams', 'ntfy', 'telegram'] as const;
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
const VERSION = /^v?\d+(\.\d+)*([-+][0-9A-Za-z.+-]*)?$/;
const LISTEN = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]*):(\d{1,5})$/;

/**
 * A duration written `30s`, `5m`, `2h`, `7d` (or `0`), parsed to milliseconds, at most `max`
 * (every duration has an upper bound: those used in a timer stay far below a timer's 24.8 days).
 */
function duration(defaultText: string, options: { positive?: boolean; max: string }) {
  const max = tryParseDuration(options.max) as number;
  return z
    .unknown()
    .transform((value, ctx) => {
      const text = value === 0 ? '0' : value;
      const read = typeof text === 'string' ? readDuration(text, { min: options.positive === true ? 1 : 0, max }) : undefined;
      if (read === undefined || !read.ok) {
        ctx.addIssue({
          code: 'custom',
          message: read === undefined ? `invalid duration ${JSON.stringify(value)} (write a unit, e.g. 30s, 5m, 2h, 7d)` : read.message,
        });
        return z.NEVER;
      }
      return read.ms;
    })
    .prefault(defaultText);
}

const name = z.string().regex(NAME, { error: 'must start with a letter or digit and contain only letters, digits, "_", "." and "-"' });

/** A glob (src/glob.ts: `*`, `?`, `[a-z]`, `[!x]`), refused when not well formed. */
const glob = z
  .string()
  .min(1)
  .superRefine((text, ctx) => {
    const problem = globProblem(text);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });

/** One glob or a list of globs over box serials. */
const globs = z.preprocess((v) => (typeof v === 'string' ? [v] : v), z.array(glob).min(1)).prefault(['*']);

const version = z.string().regex(VERSION, { error: 'must be a version such as 2.10.0' });

/** A size in bytes: a whole number, or with a unit `KiB`, `MiB`, `GiB` (e.g. `32MiB`); 1 KiB to 1 GiB. */
function size(defaultBytes: number) {
  return sizeValue().prefault(defaultBytes);
}
function sizeValue() {
  return z
    .union([z.string(), z.number()])
    .transform((value, ctx) => {
      const bytes = readSize(String(value));
      if (!(bytes >= 1024 && bytes <= 1024 ** 3)) {
        ctx.addIssue({ code: 'custom', message: `invalid size ${JSON.stringify(value)} (a size from 1KiB to 1GiB, e.g. 256KiB, 32MiB)` });
        return z.NEVER;
      }
      return bytes;
    });
}

/** The gateway client's body limits per endpoint, when not configured: a device list of 100,000 boxes is about 20 MiB. */
export const DEFAULT_MAX_BODY = {
  device_list: 32 * 1024 * 1024,
  device_details: 256 * 1024,
  call_list: 8 * 1024 * 1024,
  call_details: 8 * 1024 * 1024,
  make_call: 64 * 1024,
} as const;

/** The largest response body read per gateway endpoint (defaults fit a fleet of 100,000 boxes). */
const maxBodySchema = z.strictObject({
  device_list: size(DEFAULT_MAX_BODY.device_list),
  device_details: size(DEFAULT_MAX_BODY.device_details),
  call_list: size(DEFAULT_MAX_BODY.call_list),
  call_details: size(DEFAULT_MAX_BODY.call_details),
  make_call: size(DEFAULT_MAX_BODY.make_call),
});

/**
 * Why an account key cannot be sent (in the `account-secret-key` header), or undefined when it
 * can: a control character (often the newline `echo` left in a secret file) or a character outside
 * Latin-1. The one check, for `secret_key` here and for BOXWATCH_SECRET_KEY given to the call commands.
 */
export function secretKeyProblem(key: string): string | undefined {
  const codes = Array.from(key, (c) => c.codePointAt(0) ?? 0);
  if (codes.some((c) => c < 0x20 || (c >= 0x7f && c <= 0x9f))) return 'must not contain control characters (a trailing newline?)';
  if (codes.some((c) => c > 0xff)) return 'must contain only Latin-1 characters (a character pasted from a document?)';
  return undefined;
}

/** The options of one gateway account: all of a single `gateway:` section, and each entry of `gateways:`. */
const gatewayFields = {
  base_url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).default('http://127.0.0.1:8080'),
  secret_key: z
    .string({ error: (iss) => (iss.input === undefined ? 'is required (e.g. secret_key: ${BOXWATCH_SECRET_KEY})' : 'must be a string') })
    .min(1, { error: 'must not be empty' })
    .superRefine((key, ctx) => {
      const problem = secretKeyProblem(key);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
    }),
  timeout: duration('10s', { positive: true, max: '5m' }),
  concurrency: z.int().min(1).max(256).default(8),
  max_body: maxBodySchema.prefault({}),
};

const gatewaySchema = z.strictObject(gatewayFields);

const cronSchedule = z.string().refine(isCronExpression, { error: 'invalid cron expression (5 or 6 fields; e.g. "*/30 * * * * *")' });

/** An account name (src/box-id.ts): it prefixes the serials of the account's boxes. */
const accountName = z.string().regex(ACCOUNT_NAME, { error: 'must be lowercase letters, digits, "-" and "_" (at most 63), starting with a letter or digit' });

/** One entry of `gateways:` (docs/configuration.md, "Several accounts"). */
const accountSchema = z.strictObject({
  name: accountName,
  ...gatewayFields,
  /** This account's poll schedule; default: poll.schedule. */
  schedule: cronSchedule.optional(),
});

const gatewaysSchema = z
  .array(accountSchema)
  .min(1)
  .max(100, { error: 'at most 100 accounts' })
  .superRefine((accounts, ctx) => {
    const seen = new Set<string>();
    accounts.forEach((a, i) => {
      if (seen.has(a.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate name "${a.name}"` });
      seen.add(a.name);
    });
  });

const pollSchema = z.strictObject({
  schedule: cronSchedule.default('*/30 * * * * *'),
  details_every: duration('5m', { positive: true, max: '30d' }),
  /** The time zone the cron schedules (poll and calls) are read in; never the host's. */
  timezone: z
    .string()
    .refine(isTimeZone, { error: 'unknown time zone (an IANA name such as "Europe/Paris", or "UTC")' })
    .default('UTC'),
});

/** True for a time zone name the runtime knows (IANA names, `UTC`). */
function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** `calls:` (docs/calls.md): call ingestion. Absent: boxwatch does not read calls at all. */
const callsSchema = z.strictObject({
  schedule: z
    .string()
    .refine(isCronExpression, { error: 'invalid cron expression (5 or 6 fields; e.g. "0 * * * * *")' })
    .default('0 * * * * *'),
  /** Calls per list page (the simulator's maximum is 100). */
  per_page: z.int().min(1).max(1000).default(100),
  /** List pages plus call details per cycle, at most. */
  max_requests: z.int().min(2).max(10_000).default(60),
  /** Each cycle re-reads this far behind the newest call of the last complete read. */
  safety_window: duration('10m', { max: '1d' }),
  /** The longest gap (daemon down) caught up; older calls are left out and the gap is reported. */
  catch_up: duration('24h', { positive: true, max: '30d' }),
  /** A call `initiated` this long counts as stuck in rollups and `calls stats`. */
  stuck_after: duration('1h', { positive: true, max: '7d' }),
  /** Store destination numbers in clear (default: a keyed hash and a masked form only). */
  store_numbers: z.boolean().default(false),
  /** Store transcripts and variables (default: never). */
  store_transcripts: z.boolean().default(false),
});

/** A host name (or `host:port`) a recording download may be redirected to. */
const allowedHost = z
  .string()
  .regex(/^(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/, { error: 'must be a host name such as recordings.example.com (optionally with :port)' })
  .transform((h) => h.toLowerCase());

/** `archive:` (docs/calls.md, "Recording archive"): recordings downloaded and kept. Absent: none are. */
const archiveSchema = z.strictObject({
  /** Where recordings go: DIR/YYYY/MM/DD/<call_id>.<ext> and a .json sidecar. */
  dir: z.string().min(1).default('./data/recordings'),
  /** Archived files older than this are deleted. */
  retention: duration('90d', { positive: true, max: '3650d' }),
  /** Downloads in flight at most. */
  concurrency: z.int().min(1).max(64).default(4),
  /** Bytes per second for all downloads together (e.g. 4MiB); absent: not limited. */
  bandwidth: sizeValue().optional(),
  /** A larger recording is refused. */
  max_size: size(256 * 1024 ** 2),
  /** Hosts a recording URL may redirect to besides its own. */
  allow_hosts: z.array(allowedHost).default([]),
});

/**
 * `test_calls:` (docs/calls.md, "Test calls"): calls boxwatch places itself, on a schedule, from
 * the boxes an entry selects. A call costs money: `daily_cap` (per box and for the entry, per UTC
 * day) is required and counted in the database.
 */
const testCallSchema = z.strictObject({
  name,
  boxes: z.preprocess((v) => (typeof v === 'string' ? [v] : v), z.array(z.string().min(1)).min(1)),
  to: z.string().regex(E164, { error: 'must be an E.164 phone number (+ then 8 to 15 digits, e.g. +14155550123)' }),
  agent: z.int().min(1),
  schedule: z.string().refine(isCronExpression, { error: 'invalid cron expression (5 or 6 fields; e.g. "0 0 9 * * *")' }),
  daily_cap: z.strictObject({
    /** Test calls per box and UTC day, at most. */
    per_box: z.int().min(1).max(1_000),
    /** Test calls of this entry per UTC day, all boxes together, at most. */
    total: z.int().min(1).max(100_000),
  }),
  /** A test call not completed this long after it was placed counts as failed. */
  timeout: duration('15m', { positive: true, max: '1d' }),
  severity: z.enum(SEVERITIES).default('critical'),
});
const testCallsSchema = z.array(testCallSchema).superRefine((entries, ctx) => {
  const seen = new Set<string>();
  entries.forEach((e, i) => {
    if (seen.has(e.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate name "${e.name}"` });
    seen.add(e.name);
  });
});

/** The SQLite file when neither storage.path nor storage.url is given. */
export const DEFAULT_STORAGE_PATH = './data/boxwatch.db';

const storageSchema = z
  .strictObject({
    /** The SQLite file (the default store). */
    path: z.string().min(1).optional(),
    /**
     * A PostgreSQL database instead (`postgres://` or `postgresql://`); a secret (its password),
     * given as `${BOXWATCH_DATABASE_URL}`. Exclusive with `path`. Opened by src/store/open.ts.
     */
    url: z
      .string()
      .regex(/^postgres(ql)?:\/\/[^\s]+$/, { error: 'must be a postgres:// or postgresql:// URL, e.g. ${BOXWATCH_DATABASE_URL}' })
      .optional(),
    raw_retention: duration('14d', { positive: true, max: '3650d' }),
    rollup_retention: duration('400d', { positive: true, max: '3650d' }),
  })
  .superRefine((s, ctx) => {
    if (s.rollup_retention < s.raw_retention) {
      ctx.addIssue({ code: 'custom', path: ['rollup_retention'], message: 'must not be shorter than raw_retention' });
    }
    if (s.path !== undefined && s.url !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['url'], message: 'storage.url (PostgreSQL) and storage.path (SQLite) are mutually exclusive: give one of them' });
    }
  })
  .transform((s) => (s.url === undefined ? { ...s, path: s.path ?? DEFAULT_STORAGE_PATH } : s));

/** Fields every rule has besides name and kind. */
const ruleCommon = {
  severity: z.enum(SEVERITIES),
  for: duration('0s', { max: '30d' }),
  keep_firing_for: duration('0s', { max: '30d' }),
  boxes: globs,
  /** Only the boxes of these accounts (names of `gateways:`); default: every account. */
  accounts: z.array(accountName).min(1).optional(),
};

const disconnectedRule = z.strictObject({ name, kind: z.literal('disconnected'), ...ruleCommon });

const lowBatteryRule = z
  .strictObject({
    name,
    kind: z.literal('low_battery'),
    ...ruleCommon,
    below: z.number().gt(0).max(100).default(20),
    clear_above: z.number().optional(),
  })
  .transform((r, ctx) => {
    const clear = r.clear_above ?? r.below + 5;
    if (clear < r.below) ctx.addIssue({ code: 'custom', path: ['clear_above'], message: `must not be lower than below (${r.below})` });
    else if (clear >= 100) ctx.addIssue({ code: 'custom', path: [r.clear_above === undefined ? 'below' : 'clear_above'], message: `clear_above (${clear}) must be below 100, or the alert never clears` });
    return { ...r, clear_above: clear };
  });

const weakSignalRule = z
  .strictObject({
    name,
    kind: z.literal('weak_signal'),
    ...ruleCommon,
    below_dbm: z.number().max(0).default(-105),
    clear_above_dbm: z.number().max(0).optional(),
  })
  .transform((r, ctx) => {
    const clear = r.clear_above_dbm ?? r.below_dbm + 5;
    if (clear < r.below_dbm) ctx.addIssue({ code: 'custom', path: ['clear_above_dbm'], message: `must not be lower than below_dbm (${r.below_dbm})` });
    else if (clear >= 0) ctx.addIssue({ code: 'custom', path: [r.clear_above_dbm === undefined ? 'below_dbm' : 'clear_above_dbm'], message: `clear_above_dbm (${clear}) must be below 0, or the alert never clears` });
    return { ...r, clear_above_dbm: clear };
  });

const staleRule = z.strictObject({ name, kind: z.literal('stale'), ...ruleCommon, max_age: duration('15m', { positive: true, max: '30d' }) });

const firmwareDriftRule = z
  .strictObject({
    name,
    kind: z.literal('firmware_drift'),
    ...ruleCommon,
    /** `majority` (the fleet's most common version), a version string, or `none` to check only min_version. */
    expected: z.string().min(1).optional(),
    min_version: version.optional(),
  })
  .transform((r) => ({ ...r, expected: r.expected ?? (r.min_version === undefined ? 'majority' : 'none') }));

const missingRule = z.strictObject({
  name,
  kind: z.literal('missing'),
  ...ruleCommon,
  /** A box missing this long is forgotten (boxwatch box forget); 0s (the default): never. */
  forget_after: duration('0s', { max: '3650d' }),
});

/**
 * `window` of the call failure-rate rules: a number of calls (`20`: the box's last 20 final calls)
 * or a duration (`1h`: the final calls that started in the last hour). Output: one of the two set.
 */
const callWindow = (defaultWindow: number | string) =>
  z
    .union([z.int().min(1).max(10_000), z.string()])
    .transform((value, ctx) => {
      if (typeof value === 'number') return { calls: value, ms: null };
      const read = readDuration(value, { min: 60_000, max: tryParseDuration('30d') as number });
      if (!read.ok) {
        ctx.addIssue({ code: 'custom', message: `${read.message} (a number of calls, e.g. 20, or a duration, e.g. 1h)` });
        return z.NEVER;
      }
      return { calls: null, ms: read.ms };
    })
    .prefault(defaultWindow);

/** `above` and `clear_below` are percentages of final calls failed; clear_below defaults to above - 10 (at least 0). */
const failureShare = {
  above: z.number().min(0).lt(100).default(50),
  clear_below: z.number().min(0).max(100).optional(),
  /** Fewer final calls in the window than this: nothing to judge (no alert on 1 failed of 1). */
  min_calls: z.int().min(1).max(10_000).default(5),
};
function withClearBelow<T extends { above: number; clear_below?: number | undefined }>(r: T, ctx: z.RefinementCtx): T & { clear_below: number } {
  const clear = r.clear_below ?? Math.max(0, r.above - 10);
  if (clear > r.above) ctx.addIssue({ code: 'custom', path: ['clear_below'], message: `must not be higher than above (${r.above})` });
  return { ...r, clear_below: clear };
}

const callFailureRateRule = z
  .strictObject({
    name,
    kind: z.literal('call_failure_rate'),
    ...ruleCommon,
    window: callWindow(20),
    /** A window of calls looks back this far at most (older calls do not count). */
    max_age: duration('24h', { positive: true, max: '30d' }),
    ...failureShare,
  })
  .transform(withClearBelow);

const callStuckRule = z.strictObject({ name, kind: z.literal('call_stuck'), ...ruleCommon, max_duration: duration('30m', { positive: true, max: '7d' }) });

/**
 * `calls_silent`: `for` is how long a box that placed calls on each of the last `active_days`
 * days has placed none; the alert fires as soon as that is reached (the engine's own `for` is 0).
 */
const callsSilentRule = z
  .strictObject({
    name,
    kind: z.literal('calls_silent'),
    severity: z.enum(SEVERITIES),
    for: duration('6h', { positive: true, max: '30d' }),
    keep_firing_for: duration('0s', { max: '30d' }),
    boxes: globs,
    accounts: ruleCommon.accounts,
    active_days: z.int().min(1).max(60).default(7),
  })
  .transform((r) => ({ ...r, silent_for: r.for, for: 0 }));

const fleetCallFailureRateRule = z
  .strictObject({
    name,
    kind: z.literal('fleet_call_failure_rate'),
    ...ruleCommon,
    /** The fleet's final calls that started in this last stretch of time. */
    window: duration('1h', { positive: true, max: '30d' }),
    ...failureShare,
    min_calls: z.int().min(1).max(1_000_000).default(20),
  })
  .transform(withClearBelow);

/** `recording_lost`: the box had recordings expire before they could be archived within the last `window`. */
const recordingLostRule = z.strictObject({ name, kind: z.literal('recording_lost'), ...ruleCommon, window: duration('1h', { positive: true, max: '30d' }) });

/** `archive_failing`: the archive cannot write its files (disk full, read-only, no permission): one alert for the fleet. */
const archiveFailingRule = z.strictObject({ name, kind: z.literal('archive_failing'), ...ruleCommon });

export const ruleSchema = z.discriminatedUnion('kind', [
  disconnectedRule,
  lowBatteryRule,
  weakSignalRule,
  staleRule,
  firmwareDriftRule,
  missingRule,
  callFailureRateRule,
  callStuckRule,
  callsSilentRule,
  fleetCallFailureRateRule,
  recordingLostRule,
  archiveFailingRule,
]);

/** The rules used when the file has no `rules:` key (an explicit `rules: []` means none). */
export const DEFAULT_RULES: z.input<typeof ruleSchema>[] = [
  { name: 'box-offline', kind: 'disconnected', for: '2m', severity: 'critical' },
  { name: 'battery-low', kind: 'low_battery', below: 20, clear_above: 25, severity: 'warning' },
  { name: 'signal-weak', kind: 'weak_signal', below_dbm: -105, for: '10m', severity: 'warning' },
  { name: 'box-stale', kind: 'stale', max_age: '15m', severity: 'warning' },
  { name: 'firmware', kind: 'firmware_drift', expected: 'majority', for: '1d', severity: 'info' },
  { name: 'box-missing', kind: 'missing', severity: 'warning' },
];

const alertingSchema = z.strictObject({
  repeat_interval: duration('4h', { positive: true, max: '30d' }),
  group_wait: duration('30s', { max: '1d' }),
  inhibit: z.boolean().default(true),
  gateway: z
    .strictObject({
      /** gateway_unreachable fires after this many consecutive failed cycles. */
      unreachable_after: z.int().min(1).default(3),
      /** gateway_schema fires after this many consecutive cycles with unexpected responses. */
      schema_after: z.int().min(1).default(1),
      severity: z.enum(SEVERITIES).default('critical'),
    })
    .prefault({}),
  delivery: z
    .strictObject({
      /** First retry delay; doubles on each failure (with jitter) up to max_backoff. */
      initial_backoff: duration('5s', { positive: true, max: '1h' }),
      max_backoff: duration('5m', { positive: true, max: '1d' }),
      /** A message not delivered within this time is marked dead. */
      max_age: duration('24h', { positive: true, max: '30d' }),
    })
    .prefault({}),
});

/** A LiquidJS template (src/notify/templates.ts, checked by src/liquid.ts); one that does not parse is an error naming the line. */
const template = z.string().superRefine((text, ctx) => {
  const problem = templateProblem(text);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
});

/** Fields every notifier has besides name and type. */
const notifierCommon = {
  /** Templates of the message title and body (docs/notifications.md#templates); default: the built-in texts. */
  title: template.optional(),
  body: template.optional(),
  /** Only alerts of this severity or higher are sent (default: all). */
  min_severity: z.enum(SEVERITIES).default('info'),
  /** Only these rules (names, including the gateway_* built-ins); default: all. */
  rules: z.array(glob).min(1).optional(),
  boxes: globs,
};

const emailNotifier = z.strictObject({
  name,
  type: z.literal('email'),
  ...notifierCommon,
  smtp_url: z.url({ protocol: /^smtps?$/, error: 'must be an smtp:// or smtps:// URL' }),
  from: z.string().min(3),
  to: z.preprocess((v) => (typeof v === 'string' ? [v] : v), z.array(z.email({ error: 'must be an email address' })).min(1)),
});

const slackNotifier = z.strictObject({
  name,
  type: z.literal('slack'),
  ...notifierCommon,
  webhook_url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }),
});

const consoleNotifier = z.strictObject({ name, type: z.literal('console'), ...notifierCommon });

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' });

const webhookNotifier = z.strictObject({
  name,
  type: z.literal('webhook'),
  ...notifierCommon,
  url: httpUrl,
  /** Signs each request (X-Boxwatch-Signature); a secret. */
  hmac_secret: z.string().min(16, { error: 'must be at least 16 characters' }).optional(),
  /** Extra request headers; values may be secrets (redacted when printed). */
  headers: z
    .preprocess(
      // Header names are case-insensitive; lower case keeps them intact through the key-case conversion.
      (v) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k.toLowerCase(), x])) : v),
      z.record(z.string(), z.string()).superRefine((headers, ctx) => {
        for (const key of Object.keys(headers)) {
          if (!/^[a-z0-9-]+$/.test(key)) ctx.addIssue({ code: 'custom', path: [key], message: 'must be a header name (letters, digits and "-")' });
        }
      }),
    )
    .optional(),
});

const alertmanagerNotifier = z.strictObject({
  name,
  type: z.literal('alertmanager'),
  ...notifierCommon,
  url: httpUrl,
  /** Firing alerts are sent again this often so that Alertmanager does not resolve them by timeout. */
  resend_interval: duration('1m', { positive: true, max: '1h' }),
});

const pagerdutyNotifier = z.strictObject({
  name,
  type: z.literal('pagerduty'),
  ...notifierCommon,
  routing_key: z.string().min(1, { error: 'must not be empty' }),
  url: httpUrl.default('https://events.pagerduty.com/v2/enqueue'),
});

const teamsNotifier = z.strictObject({ name, type: z.literal('teams'), ...notifierCommon, webhook_url: httpUrl });

const ntfyNotifier = z.strictObject({
  name,
  type: z.literal('ntfy'),
  ...notifierCommon,
  /** The topic URL, e.g. https://ntfy.sh/boxwatch-alerts-x7k2. */
  url: httpUrl,
  token: z.string().min(1).optional(),
});

const telegramNotifier = z.strictObject({
  name,
  type: z.literal('telegram'),
  ...notifierCommon,
  bot_token: z.string().regex(/^\d+:[A-Za-z0-9_-]+$/, { error: 'must be a bot token (123456:ABC...)' }),
  chat_id: z.union([z.string().min(1), z.int()]).transform((v) => String(v)),
  parse_mode: z.enum(['HTML', 'MarkdownV2']).default('HTML'),
  api_url: httpUrl.default('https://api.telegram.org'),
});

export const notifierSchema = z.discriminatedUnion('type', [
  emailNotifier,
  slackNotifier,
  consoleNotifier,
  webhookNotifier,
  alertmanagerNotifier,
  pagerdutyNotifier,
  teamsNotifier,
  ntfyNotifier,
  telegramNotifier,
]);

const httpSchema = z.preprocess(
  (v) => (v === false ? { enabled: false } : v),
  z.strictObject(
    {
      enabled: z.boolean().default(true),
      listen: z
        .string()
        .refine((s) => {
          const port = LISTEN.exec(s)?.[1];
          return port !== undefined && Number(port) <= 65535;
        }, { error: 'must be host:port, e.g. 127.0.0.1:9464' })
        .default('127.0.0.1:9464'),
      /** Path prefix when served behind a reverse proxy (`/boxwatch/`); always starts and ends with `/`. */
      base_path: z
        .string()
        .regex(/^\/([A-Za-z0-9._~-]+\/?)*$/, { error: 'must be a path such as /boxwatch/ (letters, digits, . _ ~ -)' })
        .transform((p) => (p.endsWith('/') ? p : `${p}/`))
        .default('/'),
      /** The address people reach the dashboard at (`https://boxwatch.example.com/`): links in notifications. */
      external_url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
      /** Token that dashboard and API writes (silences) must send; a secret: `${BOXWATCH_ADMIN_TOKEN}`. Unset: writes are off. */
      admin_token: z.string().min(16, { error: 'must be at least 16 characters' }).optional(),
      /** Open connections at most; more are closed as they arrive (counted in /metrics). */
      max_connections: z.int().min(10).max(100_000).default(1_000),
    },
    { error: 'must be { listen: host:port } or false' },
  ),
);

/**
 * Replicas (docs/operations.md, "Running replicas"): with this section, several `boxwatch run`
 * processes share the database and lease its accounts among themselves instead of one daemon
 * holding it.
 */
const clusterSchema = z.strictObject({
  /** How long a lease lasts without renewal; renewed every third of it. */
  lease: duration('30s', { positive: true, max: '10m' }),
  /** This replica's name in leases, /healthz and `boxwatch status` (default: host, pid and a random part). */
  replica_id: z.string().regex(NAME, { error: 'letters, digits, "_", "." and "-", starting with a letter or digit' }).max(100).optional(),
}).refine((c) => c.lease >= 3_000, { path: ['lease'], error: 'must be at least 3s (leases are renewed every third of it)' });

const logSchema = z.strictObject({
  level: z.enum(LOG_LEVELS).default('info'),
  /** `auto`: human-readable on a terminal, JSON lines otherwise. */
  format: z.enum(['auto', 'json', 'pretty']).default('auto'),
});

export const configSchema = z.preprocess(
  // Without gateway: and gateways:, gateway: {} is validated so that the error names gateway.secret_key.
  (doc) => (doc !== null && typeof doc === 'object' && !Array.isArray(doc) && !('gateway' in doc) && !('gateways' in doc) ? { ...doc, gateway: {} } : doc),
  z
    .strictObject({
      gateway: gatewaySchema.optional(),
      gateways: gatewaysSchema.optional(),
      poll: pollSchema.prefault({}),
      calls: callsSchema.optional(),
      archive: archiveSchema.optional(),
      storage: storageSchema.prefault({}),
      rules: z.array(ruleSchema).prefault(DEFAULT_RULES),
      alerting: alertingSchema.prefault({}),
      notifiers: z.array(notifierSchema).prefault([{ name: 'console', type: 'console' }]),
      http: httpSchema.prefault({}),
      log: logSchema.prefault({}),
      test_calls: testCallsSchema.optional(),
      cluster: clusterSchema.optional(),
    })
    .superRefine((c, ctx) => {
      if (c.gateway !== undefined && c.gateways !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['gateways'], message: 'gateway: (one account) and gateways: (several) are mutually exclusive: give one of them' });
      }
      const accounts = c.gateways?.map((a) => a.name) ?? [DEFAULT_ACCOUNT];
      c.rules.forEach((r, i) => {
        (r.accounts ?? []).forEach((name, j) => {
          if (!accounts.includes(name)) ctx.addIssue({ code: 'custom', path: ['rules', i, 'accounts', j], message: `no account named "${name}" (accounts: ${accounts.join(', ')})` });
        });
      });
      // The archive learns of recordings from the calls boxwatch reads; archive rules need the archive.
      if (c.archive !== undefined && c.calls === undefined) ctx.addIssue({ code: 'custom', path: ['archive'], message: 'needs a calls: section (recordings are found through the calls boxwatch reads)' });
      if (c.archive === undefined) {
        c.rules.forEach((r, i) => {
          if (isArchiveRuleKind(r.kind)) ctx.addIssue({ code: 'custom', path: ['rules', i, 'kind'], message: `${r.kind} needs an archive: section` });
        });
      }
      // Call rules are judged from the calls boxwatch reads; without `calls:` it reads none.
      if (c.calls !== undefined) return;
      // Test calls are followed to their end by the call sync.
      if (c.test_calls !== undefined) ctx.addIssue({ code: 'custom', path: ['test_calls'], message: 'test calls need a calls: section (the call sync follows them to their end)' });
      c.rules.forEach((r, i) => {
        if (isCallRuleKind(r.kind)) ctx.addIssue({ code: 'custom', path: ['rules', i, 'kind'], message: `${r.kind} needs a calls: section (boxwatch reads no calls without it)` });
      });
    })
    .transform(({ gateway, gateways, ...c }) => {
      // One shape after parsing: `gateways` lists every account (a single gateway: is the account
      // "default"), each with its schedule; `gateway` is the first account's options (the call
      // commands of a single gateway: read it).
      const accounts = gateways?.map((a) => ({ ...a, schedule: a.schedule ?? c.poll.schedule })) ?? [{ name: DEFAULT_ACCOUNT, ...(gateway as GatewayOutput), schedule: c.poll.schedule }];
      const { name: _name, schedule: _schedule, ...first } = accounts[0] as (typeof accounts)[number];
      return { gateway: first, gateways: accounts, ...c };
    }),
);

type GatewayOutput = z.output<typeof gatewaySchema>;

/** The schema's output with snake_case keys (what YAML holds, durations in ms). */
export type RawConfig = z.output<typeof configSchema>;

type CamelCase<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<CamelCase<T>>}` : S;
/** Deeply renames snake_case keys to camelCase (arrays and unions preserved). */
export type Camelize<T> = T extends readonly (infer U)[]
  ? Camelize<U>[]
  : T extends object
    ? { [K in keyof T as K extends string ? CamelCase<K> : K]: Camelize<T[K]> }
    : T;

/** The validated configuration. Durations are milliseconds. */
export type Config = Camelize<RawConfig>;
export type GatewayConfig = Config['gateway'];
/** One account of `gateways:` (or the single `gateway:` as the account "default"), its schedule resolved. */
export type AccountConfig = Config['gateways'][number];
export type PollConfig = Config['poll'];
export type StorageConfig = Config['storage'];

export type CallsConfig = NonNullable<Config['calls']>;
export type ArchiveConfig = NonNullable<Config['archive']>;
export type TestCallConfig = NonNullable<Config['testCalls']>[number];
export type RuleConfig = Config['rules'][number];
export type AlertingConfig = Config['alerting'];
export type NotifierConfig = Config['notifiers'][number];
export type HttpConfig = Config['http'];
export type LogConfig = Config['log'];
export type RuleOfKind<K extends RuleKind> = Extract<RuleConfig, { kind: K }>;
export type NotifierOfType<T extends NotifierConfig['type']> = Extract<NotifierConfig, { type: T }>;

/** The schema's rule kinds are exactly RULE_KINDS (a compile error otherwise). */
type SameKinds = [RuleConfig['kind']] extends [RuleKind] ? ([RuleKind] extends [RuleConfig['kind']] ? true : never) : never;
export const SCHEMA_HAS_EVERY_RULE_KIND: SameKinds = true;
