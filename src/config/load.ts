/**
 * Loading the configuration: find the file, parse YAML, interpolate `${VAR}`, validate with zod,
 * check what spans several entries (unique names, rule references), and either return the typed
 * Config or throw one ConfigError that lists every problem by path.
 */
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError, errorMessage, type ConfigIssue } from '../errors.js';
import { camelizeKeys } from './case.js';
import { interpolate, type Deferral, type Env, type UnsetVariable } from './interpolate.js';
import { formatIssues } from './issues.js';
import { formatPath, valueAt } from './paths.js';
import { isGlob, matchesGlob } from '../glob.js';
import { readYaml } from '../yaml.js';
import { GATEWAY_RULES, TEST_CALL_FAILED } from '../vocabulary.js';
import { DEFAULT_RULES, configSchema, type Config, type RawConfig } from './schema.js';

export { readYaml, MAX_YAML_ALIASES } from '../yaml.js';

export const DEFAULT_CONFIG_PATH = './boxwatch.yaml';

export interface LoadConfigOptions {
  /** From `--config`; falls back to env BOXWATCH_CONFIG, then ./boxwatch.yaml. */
  path?: string | undefined;
  env: Env;
  /** The sections the command uses (default: all); see `ValidateOptions.uses`. */
  uses?: readonly ConfigSection[] | undefined;
}

/** A top-level section of the configuration file. */
export type ConfigSection = keyof RawConfig;

/** What the read commands (status, history, uptime, alerts, silence) use of a configuration. */
export const STORE_SECTIONS: readonly ConfigSection[] = ['storage', 'rules', 'alerting'];

export interface ValidateOptions {
  /**
   * The sections the command uses (default: all). A `${VAR}` that is not set is an error only in
   * these; elsewhere it is listed in `unset` and its field holds a stand-in of the right form
   * (`smtp://unset.invalid`), so that a read command works in a shell without the notifiers'
   * secrets. The rest of the file is validated as always.
   */
  uses?: readonly ConfigSection[] | undefined;
}

export interface LoadedConfig {
  config: Config;
  source: string;
  /** Variables not set in sections the command does not use (their fields hold stand-ins). */
  unset: UnsetVariable[];
}

/** Where the configuration comes from: the argument, BOXWATCH_CONFIG, or ./boxwatch.yaml. */
export function resolveConfigPath(options: LoadConfigOptions): string {
  if (options.path !== undefined && options.path !== '') return options.path;
  const fromEnv = options.env['BOXWATCH_CONFIG'];
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : DEFAULT_CONFIG_PATH;
}

/**
 * What a new operator does next, as indented lines: `boxwatch init` (unless the file exists),
 * then edit, then the three commands that validate, test the notifiers and start the daemon.
 */
export function firstSteps(path: string, options: { written?: boolean } = {}): string {
  const config = path === DEFAULT_CONFIG_PATH ? '' : ` --config ${path}`;
  return [
    ...(options.written ? [] : [`  boxwatch init${config === '' ? '' : ` --dir ${dirname(path)}`}      # writes ${path}, the commented example`]),
    `  edit ${path}: gateway.base_url, rules, notifiers (delete the notifiers you don't use)`,
    `  export BOXWATCH_SECRET_KEY=...   # and SMTP_URL, SLACK_WEBHOOK_URL for the example's notifiers`,
    `  boxwatch check-config${config}     # validates; prints the configuration, secrets redacted`,
    `  boxwatch notify-test${config}      # a test message through every notifier`,
    `  boxwatch run${config}              # polls, alerts, serves http://127.0.0.1:9464`,
  ].join('\n');
}

/** Reads and validates the configuration file. Throws ConfigError (exit 2) on any problem. */
export function loadConfig(options: LoadConfigOptions): LoadedConfig {
  const source = resolveConfigPath(options);
  let text: string;
  try {
    text = readFileSync(source, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && source === DEFAULT_CONFIG_PATH) {
      const message = `no configuration file: ${source} does not exist. To make one:\n${firstSteps(source)}\n(or pass --config FILE, or set BOXWATCH_CONFIG; \`boxwatch demo\` needs no configuration)`;
      throw new ConfigError([{ path: 'file', message: `${source} does not exist` }], source, message);
    }
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : errorMessage(err);
    throw new ConfigError([{ path: 'file', message: `cannot read ${source}: ${reason}` }], source, `cannot read ${source}: ${reason}`);
  }
  return { ...parseConfigText(text, options.env, source, { uses: options.uses }), source };
}

/** Documented size limits, checked before anything else so that a huge list is refused at once. */
export const CONFIG_LIMITS = { rules: 1_000, notifiers: 100 } as const;

function checkSizes(document: unknown, source: string): void {
  if (document === null || typeof document !== 'object') return;
  const issues: ConfigIssue[] = [];
  for (const [key, max] of Object.entries(CONFIG_LIMITS)) {
    const list = (document as Record<string, unknown>)[key];
    if (Array.isArray(list) && list.length > max) issues.push({ path: key, message: `${list.length} entries; at most ${max}` });
  }
  if (issues.length > 0) throw new ConfigError(issues, source);
}

/** Parses and validates configuration text (YAML). `source` names it in error messages. */
export function parseConfig(text: string, env: Env, source = 'configuration'): Config {
  return parseConfigText(text, env, source).config;
}

function parseConfigText(text: string, env: Env, source: string, options: ValidateOptions = {}): Omit<LoadedConfig, 'source'> {
  const parsed = readYaml(text, source);
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError([{ path: '(root)', message: 'must be a mapping of keys (gateway:, poll:, ...)' }], source);
  }
  return validateConfigSections(parsed, env, source, options);
}

/** Validates an already-parsed document (snake_case keys, strings not yet interpolated). */
export function validateConfig(document: unknown, env: Env, source = 'configuration'): Config {
  return validateConfigSections(document, env, source).config;
}

/** validateConfig, with unset variables tolerated outside the sections the command uses. */
export function validateConfigSections(document: unknown, env: Env, source = 'configuration', options: ValidateOptions = {}): Omit<LoadedConfig, 'source'> {
  checkSizes(document, source);
  const issues: ConfigIssue[] = [];
  const uses = options.uses;
  const deferral: Deferral = { deferred: (path) => uses !== undefined && !uses.includes(path[0] as ConfigSection), unset: [] };
  const raw = interpolate(document, env, issues, [], deferral);
  let result = configSchema.safeParse(raw, { reportInput: true });
  if (!result.success) {
    // A field whose variable is missing is already reported (or deliberately left unset): its
    // empty value is no news.
    const reported = new Set(issues.map((i) => i.path));
    const leftUnset = deferral.unset.map((u) => formatPath(u.path));
    issues.push(
      ...formatIssues(result.error.issues, raw, configSchema).filter((i) => !reported.has(i.path) && !leftUnset.some((path) => within(i.path, path))),
    );
    if (issues.length === 0) result = configSchema.safeParse(withStandIns(raw, deferral.unset));
  }
  issues.push(...crossChecks(raw));
  if (issues.length > 0 || !result.success) throw new ConfigError(dedupe(issues).map((i) => namingEntry(i, raw)), source);
  return { config: camelizeKeys(result.data) as Config, unset: deferral.unset };
}

/** True when `path` is `outer` or inside it (`notifiers[0].to[1]` is within `notifiers[0].to`). */
function within(path: string, outer: string): boolean {
  return path === outer || path.startsWith(`${outer}.`) || path.startsWith(`${outer}[`);
}

/** Values of the forms the schema asks for, tried in turn for a field whose variable is unset. */
const STAND_INS = ['unset', 'https://unset.invalid/', 'smtp://unset.invalid', 'unset@unset.invalid', '0:unset'];

/** A copy of `raw` where each unset field holds the first stand-in the schema accepts there. */
function withStandIns(raw: unknown, unset: readonly UnsetVariable[]): unknown {
  const doc = structuredClone(raw);
  for (const { path } of unset) {
    const parent = valueAt(doc, path.slice(0, -1)) as Record<PropertyKey, unknown>;
    const key = path[path.length - 1] as PropertyKey;
    for (const candidate of STAND_INS) {
      parent[key] = candidate;
      const check = configSchema.safeParse(doc);
      if (check.success || !check.error.issues.some((i) => within(formatPath(i.path), formatPath(path)))) break;
    }
  }
  return doc;
}

const ENTRY_PATH = /^(rules|notifiers)\[(\d+)\]/;

/** Adds the name of the rule or notifier an issue's path is in (`rules[1]` is `rule "battery-low"`). */
function namingEntry(issue: ConfigIssue, raw: unknown): ConfigIssue {
  const m = ENTRY_PATH.exec(issue.path);
  if (!m) return issue;
  const name = valueAt(raw, [m[1] as string, Number(m[2]), 'name']);
  if (typeof name !== 'string' || name === '') return issue;
  return { ...issue, entry: `${m[1] === 'rules' ? 'rule' : 'notifier'} ${JSON.stringify(name)}` };
}

function dedupe(issues: ConfigIssue[]): ConfigIssue[] {
  const seen = new Set<string>();
  return issues.filter((i) => {
    const key = `${i.path}\u0000${i.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function namesOf(list: unknown): { name: string; index: number }[] {
  if (!Array.isArray(list)) return [];
  const out: { name: string; index: number }[] = [];
  list.forEach((item: unknown, index) => {
    const name = item !== null && typeof item === 'object' ? (item as Record<string, unknown>)['name'] : undefined;
    if (typeof name === 'string') out.push({ name, index });
  });
  return out;
}

/** Checks across entries, run on the raw document so that they report even when other fields are bad. */
function crossChecks(raw: unknown): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  if (raw === null || typeof raw !== 'object') return issues;
  const doc = raw as Record<string, unknown>;

  for (const list of ['rules', 'notifiers'] as const) {
    const first = new Map<string, number>();
    for (const { name, index } of namesOf(doc[list])) {
      const earlier = first.get(name);
      if (earlier !== undefined) issues.push({ path: formatPath([list, index, 'name']), message: `duplicate name "${name}" (also ${formatPath([list, earlier])})` });
      else first.set(name, index);
    }
  }

  const userRules = doc['rules'] === undefined ? DEFAULT_RULES.map((r, index) => ({ name: r.name, index })) : namesOf(doc['rules']);
  const builtIn = [...GATEWAY_RULES, ...(doc['test_calls'] === undefined ? [] : [TEST_CALL_FAILED])];
  const ruleNames = new Set<string>([...builtIn, ...userRules.map((r) => r.name)]);
  for (const { name, index } of userRules) {
    if ((GATEWAY_RULES as readonly string[]).includes(name)) {
      issues.push({ path: formatPath(['rules', index, 'name']), message: `"${name}" is a built-in rule name (configure it under alerting.gateway)` });
    }
  }
  if (Array.isArray(doc['notifiers'])) {
    doc['notifiers'].forEach((n: unknown, index) => {
      const refs = n !== null && typeof n === 'object' ? (n as Record<string, unknown>)['rules'] : undefined;
      if (!Array.isArray(refs)) return;
      refs.forEach((ref: unknown, j) => {
        if (typeof ref !== 'string' || [...ruleNames].some((name) => matchesGlob(name, ref))) return;
        const message = isGlob(ref) ? `no rule matches "${ref}"` : `no rule named "${ref}"`;
        issues.push({ path: formatPath(['notifiers', index, 'rules', j]), message });
      });
    });
  }
  return issues;
}

