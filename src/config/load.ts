/**
 * Loading the configuration: find the file, parse YAML, interpolate `${VAR}`, validate with zod,
 * check what spans several entries (unique names, rule references), and either return the typed
 * Config or throw one ConfigError that lists every problem by path.
 */
import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { ConfigError, errorMessage, type ConfigIssue } from '../errors.js';
import { camelizeKeys } from './case.js';
import { interpolate, type Env } from './interpolate.js';
import { formatIssues } from './issues.js';
import { formatPath } from './paths.js';
import { isGlob, matchesGlob } from '../glob.js';
import { GATEWAY_RULES } from '../vocabulary.js';
import { DEFAULT_RULES, configSchema, type Config } from './schema.js';

export const DEFAULT_CONFIG_PATH = './boxwatch.yaml';

export interface LoadConfigOptions {
  /** From `--config`; falls back to env BOXWATCH_CONFIG, then ./boxwatch.yaml. */
  path?: string | undefined;
  env: Env;
}

/** Where the configuration comes from: the argument, BOXWATCH_CONFIG, or ./boxwatch.yaml. */
export function resolveConfigPath(options: LoadConfigOptions): string {
  if (options.path !== undefined && options.path !== '') return options.path;
  const fromEnv = options.env['BOXWATCH_CONFIG'];
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : DEFAULT_CONFIG_PATH;
}

/** Reads and validates the configuration file. Throws ConfigError (exit 2) on any problem. */
export function loadConfig(options: LoadConfigOptions): { config: Config; source: string } {
  const source = resolveConfigPath(options);
  let text: string;
  try {
    text = readFileSync(source, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : errorMessage(err);
    const hint = source === DEFAULT_CONFIG_PATH && options.path === undefined ? ' (pass --config FILE or set BOXWATCH_CONFIG)' : '';
    throw new ConfigError([{ path: 'file', message: `cannot read ${source}: ${reason}${hint}` }], source);
  }
  return { config: parseConfig(text, options.env, source), source };
}

/**
 * Parses YAML text to plain data; syntax errors (the first three: later ones are mostly
 * consequences) become one ConfigError naming line and column. Duplicate keys are errors.
 */
export function readYaml(text: string, source: string): unknown {
  const doc = parseDocument(text, { merge: true, uniqueKeys: true, prettyErrors: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      doc.errors.slice(0, 3).map((e) => ({
        path: e.linePos ? `line ${e.linePos[0].line}, column ${e.linePos[0].col}` : 'yaml',
        message: (e.message.split('\n')[0] ?? e.message).replace(/ at line \d+, column \d+:?$/, ''),
      })),
      source,
    );
  }
  return doc.toJS({ maxAliasCount: 1000 }) ?? {};
}

/** Parses and validates configuration text (YAML). `source` names it in error messages. */
export function parseConfig(text: string, env: Env, source = 'configuration'): Config {
  const parsed = readYaml(text, source);
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError([{ path: '(root)', message: 'must be a mapping of keys (gateway:, poll:, ...)' }], source);
  }
  return validateConfig(parsed, env, source);
}

/** Validates an already-parsed document (snake_case keys, strings not yet interpolated). */
export function validateConfig(document: unknown, env: Env, source = 'configuration'): Config {
  const issues: ConfigIssue[] = [];
  const raw = interpolate(document, env, issues);
  const result = configSchema.safeParse(raw, { reportInput: true });
  if (!result.success) {
    // A field whose variable is missing is already reported; its empty value is no news.
    const reported = new Set(issues.map((i) => i.path));
    issues.push(...formatIssues(result.error.issues, raw, configSchema).filter((i) => !reported.has(i.path)));
  }
  issues.push(...crossChecks(raw));
  if (issues.length > 0 || !result.success) throw new ConfigError(dedupe(issues), source);
  return camelizeKeys(result.data) as Config;
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
  const ruleNames = new Set<string>([...GATEWAY_RULES, ...userRules.map((r) => r.name)]);
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

