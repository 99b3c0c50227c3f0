/**
 * `${VAR}` interpolation over a parsed YAML value: every string scalar (never a key) has
 * `${NAME}` replaced by the environment variable NAME. `${NAME:-fallback}` uses the fallback
 * when NAME is unset or empty; `$${` is a literal `${`. Substituted values are always strings.
 * A reference to an unset variable is a problem reported at the path where it was used, unless
 * the path is `deferred` (a section the command does not use): then it is only recorded in
 * `unset`, and the caller decides.
 */
import type { ConfigIssue } from '../errors.js';
import { formatPath, type PathSegment } from './paths.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** A `${NAME}` that was not set, in a section the command does not use. */
export interface UnsetVariable {
  name: string;
  path: PathSegment[];
}

/** Where unset variables are only recorded, not problems (see `interpolate`). */
export interface Deferral {
  deferred: (path: readonly PathSegment[]) => boolean;
  unset: UnsetVariable[];
}

const REFERENCE = /\$\$\{|\$\{([^}]*)\}|\$\{/g;
const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Replaces references in one string; problems are pushed to `issues` with `path`. */
export function interpolateString(text: string, env: Env, path: PathSegment[], issues: ConfigIssue[], deferral?: Deferral): string {
  return text.replace(REFERENCE, (match: string, inner: string | undefined) => {
    if (match === '$${') return '${';
    if (inner === undefined) {
      issues.push({ path: formatPath(path), message: 'unterminated "${" (write "$${" for a literal "${")' });
      return match;
    }
    const sep = inner.indexOf(':-');
    const name = sep === -1 ? inner : inner.slice(0, sep);
    if (!VAR_NAME.test(name)) {
      issues.push({ path: formatPath(path), message: `invalid environment variable reference "\${${inner}}"` });
      return match;
    }
    const value = env[name];
    if (sep !== -1) return value === undefined || value === '' ? inner.slice(sep + 2) : value;
    if (value === undefined) {
      if (deferral?.deferred(path)) deferral.unset.push({ name, path });
      else issues.push({ path: formatPath(path), message: `environment variable ${name} is not set` });
      return '';
    }
    return value;
  });
}

/** Returns a copy of `value` with every string interpolated. */
export function interpolate(value: unknown, env: Env, issues: ConfigIssue[], path: PathSegment[] = [], deferral?: Deferral): unknown {
  if (typeof value === 'string') return interpolateString(value, env, path, issues, deferral);
  if (Array.isArray(value)) return value.map((item, i) => interpolate(item, env, issues, [...path, i], deferral));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = interpolate(item, env, issues, [...path, key], deferral);
    return out;
  }
  return value;
}
