/**
 * Unit tests for a rule configuration (`boxwatch rules test FILE`), in the spirit of
 * `promtool test rules`: box observations over a fake timeline go through the daemon's own alert
 * stage (`AlertPipeline.decide`: rules, engine, forgetting, acknowledgements) with no gateway and
 * no database file, and the alerts open at given times are compared with the expected ones. It
 * sits with the CLI, above the store it opens.
 *
 * Everything here is pure except for `readFile`, which the caller passes to load `rule_files`,
 * and the in-memory SQLite database that holds a test case's calls for the call rules.
 * The file format is documented in docs/cli-alerts.md; config/rules.test.yaml is an example.
 */
import { accountOf, DEFAULT_ACCOUNT } from '../box-id.js';
import { dirname, isAbsolute, join } from 'node:path';
import { z } from 'zod';
import { validateConfig, type Config, type Env } from '../config/index.js';
import { readYaml } from '../yaml.js';
import { formatIssues } from '../config/issues.js';
import { readDuration } from '../duration.js';
import { ConfigError, errorMessage, type ConfigIssue } from '../errors.js';
import type { BoxState } from '../domain/store.js';
import { formatDuration } from '../duration.js';
import { GATEWAY_RULES, isCallRuleKind } from '../vocabulary.js';
import type { RuleConfig } from '../config/index.js';
import { readCallFacts, type CallFacts } from '../rules/facts.js';
import type { CallObservation } from '../domain/calls.js';
import { openStore } from '../store/index.js';
import type { GatewayCycle } from '../alerts/gateway.js';
import { holdBack } from '../alerts/hold-back.js';
import { AlertPipeline } from '../alerts/pipeline.js';
import type { Silence } from '../alerts/silences.js';
import type { AlertState, HeldBackReason } from '../alerts/types.js';

/** The start of every test's timeline (the absolute time matters only for printed times). */
export const TEST_EPOCH = Date.parse('2026-01-01T00:00:00Z');

// --- the file format -----------------------------------------------------------------------

/**
 * The most evaluations one test case may ask for (its last `at` / evaluation_interval), and the
 * longest `values` timeline: a file asking for more is refused (exit 2) naming the field.
 */
export const MAX_EVALUATIONS = 100_000;

/** `5m`, `0`, or `-20m` (only last_seen may point before the start). */
function offset(options: { negative?: boolean } = {}) {
  return z.union([z.string(), z.number()]).transform((value, ctx) => {
    const text = String(value).trim();
    const negative = options.negative === true && text.startsWith('-');
    const read = readDuration(negative ? text.slice(1) : text);
    if (!read.ok) {
      ctx.addIssue({ code: 'custom', message: read.message });
      return z.NEVER;
    }
    return negative ? -read.ms : read.ms;
  });
}

const LAST_SEEN_NOW = 'now';
/** `now` (seen at every evaluation) or a time offset (last seen then, and not since). */
const lastSeen = z.union([z.literal(LAST_SEEN_NOW), offset({ negative: true })]);
const firmware = z.union([z.string().min(1), z.number()]).transform(String);
const nullableNumber = z.number().nullable();

/** Fields a box observation may set. */
const observation = {
  name: z.string().optional(),
  connected: z.boolean().optional(),
  battery: nullableNumber.optional(),
  signal: nullableNumber.optional(),
  firmware: firmware.optional(),
  last_seen: lastSeen.optional(),
  missing: z.boolean().optional(),
};

type Observed = {
  name?: string;
  connected?: boolean;
  battery?: number | null;
  signal?: number | null;
  firmware?: string;
  last_seen?: 'now' | number;
  missing?: boolean;
};

const TIMELINE_FIELDS = ['connected', 'battery', 'signal', 'firmware', 'last_seen', 'missing'] as const;
type TimelineField = (typeof TIMELINE_FIELDS)[number];

/**
 * Expands a promtool-style value string: `50 40 _ 19`, `100-10x5` (100 90 80 70 60 50),
 * `1x3` (1 1 1 1), `_x2` (two blanks). `_` means "no change". Returns the tokens.
 */
export function expandTimeline(text: string): { tokens: (string | null)[]; error?: string } {
  const tokens: (string | null)[] = [];
  const tooLong = { tokens, error: `the timeline is longer than ${MAX_EVALUATIONS} values` };
  for (const word of text.trim().split(/\s+/).filter(Boolean)) {
    const m = /^(-?\d+(?:\.\d+)?)([+-]\d+(?:\.\d+)?)?x(\d+)$/.exec(word);
    const blanks = /^_x(\d+)$/.exec(word);
    if (blanks) {
      if (tokens.length + Number(blanks[1]) > MAX_EVALUATIONS) return tooLong;
      for (let i = 0; i < Number(blanks[1]); i++) tokens.push(null);
    } else if (m) {
      const start = Number(m[1]);
      const stepText = m[2];
      const step = stepText === undefined ? 0 : Number(stepText);
      const n = Number(m[3]);
      if (tokens.length + n >= MAX_EVALUATIONS) return tooLong;
      for (let i = 0; i <= n; i++) tokens.push(String(Math.round((start + i * step) * 1e9) / 1e9));
    } else {
      tokens.push(word === '_' ? null : word);
    }
  }
  return { tokens };
}

/** Converts one timeline token for a field; a string is an error message. */
function timelineValue(field: TimelineField, token: string): { value: Observed[TimelineField] } | string {
  switch (field) {
    case 'connected':
    case 'missing': {
      if (['1', 'true', 'yes'].includes(token)) return { value: true };
      if (['0', 'false', 'no'].includes(token)) return { value: false };
      return `"${token}" is not a boolean (use 1/0, true/false or _)`;
    }
    case 'battery':
    case 'signal': {
      if (token === 'null') return { value: null };
      const n = Number(token);
      return Number.isFinite(n) ? { value: n } : `"${token}" is not a number (or null, or _)`;
    }
    case 'firmware':
      return { value: token };
    case 'last_seen': {
      const parsed = lastSeen.safeParse(token);
      return parsed.success ? { value: parsed.data } : `"${token}" is not "now" or a time offset such as 5m`;
    }
  }
}

const timelineText = z.union([z.string(), z.number()]).transform(String).optional();
const timelines = z
  .strictObject({ connected: timelineText, battery: timelineText, signal: timelineText, firmware: timelineText, last_seen: timelineText, missing: timelineText })
  .transform((raw, ctx) => {
    const out: Partial<Record<TimelineField, (Observed[TimelineField] | undefined)[]>> = {};
    for (const field of TIMELINE_FIELDS) {
      const text = raw[field];
      if (text === undefined) continue;
      const { tokens, error } = expandTimeline(text);
      if (error !== undefined) {
        ctx.addIssue({ code: 'custom', path: [field], message: error });
        continue;
      }
      out[field] = tokens.map((token, i) => {
        if (token === null) return undefined;
        const v = timelineValue(field, token);
        if (typeof v === 'string') {
          ctx.addIssue({ code: 'custom', path: [field], message: `value ${i + 1}: ${v}` });
          return undefined;
        }
        return v.value;
      });
    }
    return out;
  });

const boxEntry = z.strictObject({ serial: z.string().min(1), ...observation, values: timelines.optional() });
const seriesEvent = z.strictObject({ box: z.string().min(1), at: offset(), ...observation });

/** Calls a box places (`calls:` of a test case), judged by the call rules: `count` calls started at `at`, with this status for good. */
const callEvent = z.strictObject({
  box: z.string().min(1),
  at: offset({ negative: true }),
  status: z.enum(['completed', 'failed', 'initiated']),
  count: z.int().min(1).max(10_000).default(1),
  agent: z.int().min(1).default(1),
});

const expectedAlert = z.strictObject({
  rule: z.string().min(1),
  /** Box serial; omitted for the gateway alerts. */
  box: z.string().min(1).optional(),
  state: z.enum(['pending', 'firing']),
  severity: z.enum(['critical', 'warning', 'info']).optional(),
  value: z.union([z.number(), z.string(), z.null()]).optional(),
  held_back: z.enum(['silenced', 'inhibited', 'gateway_down', 'none']).optional(),
});

const alertTest = z.strictObject({
  at: offset(),
  /** Only compare alerts of this rule / this box (like promtool's alertname). */
  rule: z.string().min(1).optional(),
  box: z.string().min(1).optional(),
  expected: z.array(expectedAlert).default([]),
});

const testCase = z.strictObject({
  name: z.string().optional(),
  /** Spacing of `values` timelines; default: evaluation_interval. */
  interval: offset().optional(),
  boxes: z.array(boxEntry).default([]),
  series: z.array(seriesEvent).default([]),
  calls: z.array(callEvent).default([]),
  gateway_down: z.array(z.strictObject({ from: offset(), to: offset() })).default([]),
  silences: z
    .array(
      z.strictObject({
        boxes: z.preprocess((v) => (typeof v === 'string' ? [v] : v), z.array(z.string().min(1))).optional(),
        rules: z.preprocess((v) => (typeof v === 'string' ? [v] : v), z.array(z.string().min(1))).optional(),
        from: offset().default(0),
        to: offset(),
      }),
    )
    .default([]),
  alert_tests: z.array(alertTest).min(1),
});

const testFileSchema = z.strictObject({
  /** The accounts (as in the configuration; only their names count) when the rules' own document has none. */
  gateways: z.array(z.unknown()).optional(),
  rule_files: z.array(z.string().min(1)).min(1).optional(),
  rules: z.array(z.unknown()).optional(),
  alerting: z.record(z.string(), z.unknown()).optional(),
  evaluation_interval: offset().default(30_000),
  tests: z.array(testCase).min(1),
});

export type RulesTestCase = z.output<typeof testCase>;

/** A parsed test file: the rules under test (as the daemon would load them) and the cases. */
export interface RulesTestSuite {
  source: string;
  /** Rules and alerting settings, validated exactly as in the configuration, and the accounts' names (`default` without `gateways:`). */
  config: RulesConfig;
  /** Where the rules came from (test file, rule files or the configuration). */
  rulesFrom: string[];
  evaluationIntervalMs: number;
  tests: RulesTestCase[];
}

export interface ParseOptions {
  /** Name of the test file (error messages; base of relative rule_files). */
  source: string;
  env: Env;
  readFile: (path: string) => string;
  /** Rules to use when the file has neither `rules` nor `rule_files` (the --config file). */
  fallbackConfig?: string;
}

const PLACEHOLDER_KEY = 'rules-test';

/** What a rules test runs on: the rules, the alerting settings and the accounts' names. */
export type RulesConfig = Pick<Config, 'rules' | 'alerting'> & { accounts: string[] };

/**
 * Validates `rules:` and `alerting:` of a document as the configuration loader does, with the
 * accounts of its `gateways:` (else of `gateways`, the test file's; else the one account
 * "default"): only their names are kept, so no key or address is needed.
 */
function rulesConfig(doc: Record<string, unknown>, env: Env, source: string, gateways?: unknown[]): RulesConfig {
  // Call rules need a calls: section; a test's calls are its own (`calls:` of a test case).
  const picked: Record<string, unknown> = { calls: doc['calls'] ?? {} };
  const accounts = Array.isArray(doc['gateways']) ? (doc['gateways'] as unknown[]) : gateways;
  if (accounts === undefined) picked['gateway'] = { secret_key: PLACEHOLDER_KEY };
  else picked['gateways'] = accounts.map((a) => (a !== null && typeof a === 'object' && !Array.isArray(a) ? { name: (a as Record<string, unknown>)['name'], secret_key: PLACEHOLDER_KEY } : a));
  if (doc['rules'] !== undefined) picked['rules'] = doc['rules'];
  if (doc['alerting'] !== undefined) picked['alerting'] = doc['alerting'];
  const config = validateConfig(picked, env, source);
  return { rules: config.rules, alerting: config.alerting, accounts: config.gateways.map((a) => a.name) };
}


function readRuleFile(path: string, options: ParseOptions, gateways: unknown[] | undefined): RulesConfig {
  let text: string;
  try {
    text = options.readFile(path);
  } catch (err) {
    throw new ConfigError([{ path: 'rule_files', message: `cannot read ${path}: ${errorMessage(err)}` }], options.source);
  }
  const doc = readYaml(text, path);
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError([{ path: '(root)', message: 'must be a mapping with a rules: key' }], path);
  return rulesConfig(doc as Record<string, unknown>, options.env, path, gateways);
}

/** Parses and validates a rules test file. Throws ConfigError (exit 2) naming the bad field's path. */
export function parseRulesTest(text: string, options: ParseOptions): RulesTestSuite {
  const { source } = options;
  const raw = readYaml(text, source);
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError([{ path: '(root)', message: 'must be a mapping with a tests: key' }], source);
  const parsed = testFileSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(formatIssues(parsed.error.issues, raw, testFileSchema), source);
  const file = parsed.data;
  const issues: ConfigIssue[] = [];
  if (file.rules !== undefined && file.rule_files !== undefined) issues.push({ path: 'rules', message: 'use either rules or rule_files, not both' });
  file.tests.forEach((t, i) => {
    t.gateway_down.forEach((d, j) => {
      if (d.to <= d.from) issues.push({ path: `tests[${i}].gateway_down[${j}].to`, message: 'must be after from' });
    });
    t.silences.forEach((s, j) => {
      if (!s.boxes?.length && !s.rules?.length) issues.push({ path: `tests[${i}].silences[${j}]`, message: 'needs boxes or rules' });
      if (s.to <= s.from) issues.push({ path: `tests[${i}].silences[${j}].to`, message: 'must be after from' });
    });
    if (t.interval !== undefined && t.interval <= 0) issues.push({ path: `tests[${i}].interval`, message: 'must be longer than 0s' });
    t.alert_tests.forEach((a, j) => {
      const steps = file.evaluation_interval > 0 ? a.at / file.evaluation_interval : 0;
      if (steps > MAX_EVALUATIONS) {
        issues.push({ path: `tests[${i}].alert_tests[${j}].at`, message: `needs ${Math.floor(steps)} evaluations (at / evaluation_interval); the limit is ${MAX_EVALUATIONS}` });
      }
    });
  });
  if (file.evaluation_interval <= 0) issues.push({ path: 'evaluation_interval', message: 'must be longer than 0s' });
  if (issues.length > 0) throw new ConfigError(issues, source);

  let config: RulesConfig;
  let rulesFrom: string[];
  const gateways = file.gateways;
  if (file.rule_files !== undefined) {
    const base = dirname(source);
    const paths = file.rule_files.map((p) => (isAbsolute(p) ? p : join(base, p)));
    const loaded = paths.map((p) => readRuleFile(p, options, gateways));
    const rules = loaded.flatMap((c) => c.rules);
    const seen = new Set<string>();
    for (const r of rules) {
      if (seen.has(r.name)) throw new ConfigError([{ path: 'rule_files', message: `rule "${r.name}" is defined in more than one file` }], source);
      seen.add(r.name);
    }
    const alerting = file.alerting !== undefined ? rulesConfig({ alerting: file.alerting }, options.env, source).alerting : (loaded[0] as Pick<Config, 'alerting'>).alerting;
    config = { rules, alerting, accounts: rulesConfig({}, options.env, source, gateways).accounts };
    rulesFrom = paths;
  } else if (file.rules !== undefined) {
    config = rulesConfig(raw as Record<string, unknown>, options.env, source);
    rulesFrom = [source];
  } else if (options.fallbackConfig !== undefined) {
    const fromConfig = readRuleFile(options.fallbackConfig, options, gateways);
    config = file.alerting !== undefined ? { ...fromConfig, alerting: rulesConfig({ alerting: file.alerting }, options.env, source).alerting } : fromConfig;
    rulesFrom = [options.fallbackConfig];
  } else {
    throw new ConfigError([{ path: 'rules', message: 'no rules to test: give rules, rule_files, or --config' }], source);
  }

  // Expected rule names must exist: a typo would otherwise "pass" as an absent alert.
  const names = new Set([...config.rules.map((r) => r.name), ...GATEWAY_RULES]);
  file.tests.forEach((t, i) =>
    t.alert_tests.forEach((a, j) => {
      if (a.rule !== undefined && !names.has(a.rule)) issues.push({ path: `tests[${i}].alert_tests[${j}].rule`, message: `no rule named "${a.rule}" (rules: ${[...names].join(', ')})` });
      a.expected.forEach((e, k) => {
        if (!names.has(e.rule)) issues.push({ path: `tests[${i}].alert_tests[${j}].expected[${k}].rule`, message: `no rule named "${e.rule}" (rules: ${[...names].join(', ')})` });
      });
    }),
  );
  // A box of an account that is not configured would never be polled: named, not silently unjudged.
  const accountIssue = (key: string, path: string): void => {
    const account = accountOf(key);
    if (!config.accounts.includes(account)) issues.push({ path, message: `box ${key} is of account "${account}", which is not configured (accounts: ${config.accounts.join(', ')})` });
  };
  file.tests.forEach((t, i) => {
    t.boxes.forEach((b, j) => accountIssue(b.serial, `tests[${i}].boxes[${j}].serial`));
    t.series.forEach((e, j) => accountIssue(e.box, `tests[${i}].series[${j}].box`));
    t.calls.forEach((c, j) => accountIssue(c.box, `tests[${i}].calls[${j}].box`));
  });
  if (issues.length > 0) throw new ConfigError(issues, source);
  return { source, config, rulesFrom, evaluationIntervalMs: file.evaluation_interval, tests: file.tests };
}

// --- running -------------------------------------------------------------------------------

/** An alert as the tests compare it. */
export interface ObservedAlert {
  rule: string;
  /** '' for the gateway alerts. */
  box: string;
  state: 'pending' | 'firing';
  severity: string;
  value: number | string | null;
  heldBack: HeldBackReason | 'none';
}

export interface CaseResult {
  /** `name @ at` as written. */
  name: string;
  /** Index path for messages: `tests[0].alert_tests[1]`. */
  path: string;
  pass: boolean;
  /** Expected alerts not found (as text). */
  missing: string[];
  /** Alerts found that were not expected (as text). */
  unexpected: string[];
}

interface Change {
  at: number;
  order: number;
  fields: Observed;
}

/** Every observation of every box in a test, in time order (ties: boxes entry, timelines, series). */
function changesByBox(t: RulesTestCase, intervalMs: number): Map<string, Change[]> {
  const map = new Map<string, Change[]>();
  const add = (serial: string, change: Change): void => {
    const list = map.get(serial);
    if (list) list.push(change);
    else map.set(serial, [change]);
  };
  let order = 0;
  for (const b of t.boxes) {
    const { serial, values, ...fields } = b;
    add(serial, { at: 0, order: order++, fields });
    for (const field of TIMELINE_FIELDS) {
      (values?.[field] ?? []).forEach((value, i) => {
        if (value !== undefined) add(serial, { at: i * intervalMs, order: order++, fields: { [field]: value } });
      });
    }
  }
  for (const e of t.series) {
    const { box, at, ...fields } = e;
    add(box, { at, order: order++, fields });
  }
  for (const list of map.values()) list.sort((a, b) => a.at - b.at || a.order - b.order);
  return map;
}

/** The box as the store would hold it at `t` (ms since the start), or undefined before it appears. */
function boxAt(serial: string, id: number, changes: readonly Change[], t: number): BoxState | undefined {
  const first = changes[0];
  if (first === undefined || first.at > t) return undefined;
  let name = serial;
  let connected = true;
  let battery: number | null = 80;
  let signal: number | null = -70;
  let fw = '2.10.0';
  let seen: 'now' | number = LAST_SEEN_NOW;
  let missingSince: number | null = null;
  for (const c of changes) {
    if (c.at > t) break;
    const f = c.fields;
    if (f.name !== undefined) name = f.name;
    if (f.connected !== undefined) connected = f.connected;
    if (f.battery !== undefined) battery = f.battery;
    if (f.signal !== undefined) signal = f.signal;
    if (f.firmware !== undefined) fw = f.firmware;
    if (f.last_seen !== undefined) seen = f.last_seen;
    if (f.missing !== undefined) missingSince = f.missing ? (missingSince ?? c.at) : null;
  }
  const now = TEST_EPOCH + t;
  return {
    serial,
    account: accountOf(serial),
    id,
    name,
    connected,
    battery,
    signal,
    firmware: fw,
    lastSeen: seen === LAST_SEEN_NOW ? now : TEST_EPOCH + seen,
    registeredAt: TEST_EPOCH,
    location: null,
    ip: null,
    detailsAt: now,
    firstSeen: TEST_EPOCH + first.at,
    lastPolled: missingSince === null ? now : TEST_EPOCH + missingSince,
    missingSince: missingSince === null ? null : TEST_EPOCH + missingSince,
  };
}

/**
 * Runs one test case: at every evaluation interval up to the last `at`, one cycle per account
 * through the daemon's own `AlertPipeline.decide` (forgetting missing boxes, acknowledgements and
 * retired accounts included), its write applied as the store applies it.
 */
export async function runTestCase(suite: RulesTestSuite, t: RulesTestCase, index: number): Promise<CaseResult[]> {
  const ei = suite.evaluationIntervalMs;
  const changes = changesByBox(t, t.interval ?? ei);
  const serials = [...changes.keys()];
  const silences: Silence[] = t.silences.map((s, i) => ({
    id: `silences[${i}]`,
    matchers: { ...(s.boxes ? { boxes: s.boxes } : {}), ...(s.rules ? { rules: s.rules } : {}) },
    startsAt: TEST_EPOCH + s.from,
    endsAt: TEST_EPOCH + s.to,
    comment: 'rules test',
  }));
  const wanted = new Set(t.alert_tests.map((a) => Math.floor(a.at / ei)));
  const lastStep = Math.max(...wanted);
  const snapshots = new Map<number, ObservedAlert[]>();
  let states = new Map<string, AlertState>();
  /** Boxes the pipeline forgot, until they are listed again. */
  const forgotten = new Set<string>();
  const calls = testCalls(suite.config.rules, t);
  let facts: CallFacts | null = null;
  const pipeline = new AlertPipeline({
    config: { rules: suite.config.rules, alerting: suite.config.alerting, notifiers: [], gateways: suite.config.accounts.map((name) => ({ name })) },
    callFacts: () => facts,
  });
  try {
    for (let k = 0; k <= lastStep; k++) {
      const at = k * ei;
      const now = TEST_EPOCH + at;
      const down = t.gateway_down.some((d) => at >= d.from && at < d.to);
      const cycle: GatewayCycle = down ? { outcome: 'failed', errorCode: 'unavailable' } : { outcome: 'ok', errorCode: null };
      const boxes = serials.map((serial, i) => boxAt(serial, i + 1, changes.get(serial) ?? [], at)).filter((b): b is BoxState => b !== undefined);
      for (const b of boxes) if (b.missingSince === null) forgotten.delete(b.serial);
      const fleet = boxes.filter((b) => !forgotten.has(b.serial));
      // One cycle per account, as the daemon polls them: each judges its own boxes and alerts.
      for (const account of suite.config.accounts) {
        facts = (await calls?.factsAt(at, account)) ?? null;
        const { alerts } = pipeline.decide({ ...cycle, account }, { boxes: fleet, states, silences }, now, now);
        states = new Map([...states, ...alerts.states]);
        for (const key of alerts.dropped) states.delete(key);
        for (const serial of alerts.forget ?? []) forgotten.add(serial);
      }
      if (!wanted.has(k)) continue;
      const heldBack = holdBack(states.values(), { now, gatewayDown: down, silences, inhibit: suite.config.alerting.inhibit });
      const open: ObservedAlert[] = [];
      for (const s of states.values()) {
        if (s.status !== 'pending' && s.status !== 'firing') continue;
        open.push({ rule: s.rule, box: s.serial, state: s.status, severity: s.severity, value: s.value, heldBack: heldBack.get(s.key)?.reason ?? 'none' });
      }
      snapshots.set(k, open);
    }
  } finally {
    calls?.close();
  }
  const name = t.name ?? `tests[${index}]`;
  return t.alert_tests.map((a, j) => {
    const actual = (snapshots.get(Math.floor(a.at / ei)) ?? []).filter((o) => (a.rule === undefined || o.rule === a.rule) && (a.box === undefined || o.box === a.box));
    const { missing, unexpected } = compareAlerts(a.expected, actual);
    return { name: `${name} @ ${formatDuration(a.at, { parts: 4 })}`, path: `tests[${index}].alert_tests[${j}]`, pass: missing.length === 0 && unexpected.length === 0, missing, unexpected };
  });
}

/**
 * The calls of a test case in an in-memory SQLite database, so that the call rules are judged by
 * the daemon's own queries (readCallFacts): at each evaluation the calls started by then are
 * stored and the facts read. Null when no rule is a call rule.
 */
function testCalls(rules: readonly RuleConfig[], t: RulesTestCase): { factsAt(at: number, account: string): Promise<CallFacts>; close(): void } | null {
  if (!rules.some((r) => isCallRuleKind(r.kind))) return null;
  const store = openStore(':memory:');
  const pending = t.calls.flatMap((c, i) =>
    Array.from({ length: c.count }, (_, n) => ({ ...c, id: `${i}-${n}` })),
  ).sort((a, b) => a.at - b.at);
  let next = 0;
  return {
    factsAt(at, account) {
      const now = TEST_EPOCH + at;
      const upserts: CallObservation[] = [];
      for (; next < pending.length && (pending[next] as (typeof pending)[number]).at <= at; next++) {
        const c = pending[next] as (typeof pending)[number];
        const startedAt = TEST_EPOCH + c.at;
        const final = c.status !== 'initiated';
        upserts.push({
          callId: c.id, serial: c.box, agentId: c.agent, status: c.status, direction: 'outbound', startedAt,
          endedAt: final ? startedAt : null, durationSec: final ? 0 : null, toHash: '', toMasked: '', toNumber: null,
          recording: null, transcript: null, variables: null, detailsRead: false, wantsDetails: false,
        });
      }
      if (upserts.length > 0) store.calls.write({ account: DEFAULT_ACCOUNT, now, upserts, checked: [], sync: { highWater: null, syncedAt: null, resume: null }, stuckAfterMs: CALLS_STUCK_AFTER_MS });
      return readCallFacts(store.calls, rules, now, { lookBackMs: CALLS_LOOK_BACK_MS, account });
    },
    close: () => store.close(),
  };
}

/** `calls.catch_up` and `calls.stuck_after` at their defaults: how far back a test's calls count. */
const CALLS_LOOK_BACK_MS = 24 * 3_600_000;
const CALLS_STUCK_AFTER_MS = 3_600_000;

type Expected = z.output<typeof expectedAlert>;

/** Matches expected alerts with actual ones; fields not given in an expectation are not compared. */
export function compareAlerts(expected: readonly Expected[], actual: readonly ObservedAlert[]): { missing: string[]; unexpected: string[] } {
  const left = [...actual].sort(byAlert);
  const missing: string[] = [];
  for (const e of expected) {
    const i = left.findIndex(
      (o) =>
        o.rule === e.rule &&
        o.box === (e.box ?? '') &&
        o.state === e.state &&
        (e.severity === undefined || o.severity === e.severity) &&
        (e.value === undefined || o.value === e.value || String(o.value) === String(e.value)) &&
        (e.held_back === undefined || o.heldBack === e.held_back),
    );
    if (i >= 0) left.splice(i, 1);
    else missing.push(expectedText(e));
  }
  return { missing, unexpected: left.map(alertText) };
}

const byAlert = (a: ObservedAlert, b: ObservedAlert): number => a.rule.localeCompare(b.rule) || a.box.localeCompare(b.box);

function expectedText(e: Expected): string {
  const extra = [
    e.severity === undefined ? '' : `severity ${e.severity}`,
    e.value === undefined ? '' : `value ${String(e.value)}`,
    e.held_back === undefined ? '' : `held back ${e.held_back}`,
  ].filter(Boolean);
  return `${e.rule}${e.box === undefined ? '' : ` ${e.box}`} ${e.state}${extra.length > 0 ? ` (${extra.join(', ')})` : ''}`;
}

function alertText(o: ObservedAlert): string {
  return `${o.rule}${o.box === '' ? '' : ` ${o.box}`} ${o.state} (severity ${o.severity}, value ${String(o.value)}, held back ${o.heldBack})`;
}

/** Runs every case of a suite. */
export async function runRulesTests(suite: RulesTestSuite): Promise<CaseResult[]> {
  const results: CaseResult[] = [];
  for (const [i, t] of suite.tests.entries()) results.push(...(await runTestCase(suite, t, i)));
  return results;
}
