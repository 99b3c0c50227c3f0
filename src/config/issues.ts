/**
 * Turns zod issues into short, path-named problems a person can act on
 * (`rules[1].belw: unknown key (did you mean "below"?)`). Values are echoed only where they help
 * and cannot be secrets (durations, enum choices, kinds); URLs and keys are never echoed.
 */
import type { z } from 'zod';
import type { ConfigIssue } from '../errors.js';
import { formatPath, valueAt } from './paths.js';

type ZodIssue = z.core.$ZodIssue;

/** The parts of a zod schema definition the key lookup walks through. */
interface Def {
  type: string;
  shape?: Record<string, { _zod: { def: Def } }>;
  innerType?: { _zod: { def: Def } };
  in?: { _zod: { def: Def } };
  out?: { _zod: { def: Def } };
  element?: { _zod: { def: Def } };
  options?: { _zod: { def: Def } }[];
  discriminator?: string;
}

/** Object definitions reachable from `def` without consuming a path segment. */
function objectDefs(def: Def, input: unknown): Def[] {
  switch (def.type) {
    case 'object':
      return [def];
    case 'default':
    case 'prefault':
    case 'optional':
    case 'nullable':
      return def.innerType ? objectDefs(def.innerType._zod.def, input) : [];
    case 'pipe':
      return [...(def.out ? objectDefs(def.out._zod.def, input) : []), ...(def.in ? objectDefs(def.in._zod.def, input) : [])];
    case 'union': {
      const defs = (def.options ?? []).flatMap((o) => objectDefs(o._zod.def, input));
      const disc = def.discriminator;
      if (disc === undefined || input === null || typeof input !== 'object') return defs;
      const wanted = (input as Record<string, unknown>)[disc];
      const matching = defs.filter((d) => {
        const literal = d.shape?.[disc]?._zod.def as { values?: unknown[] } | undefined;
        return literal?.values?.includes(wanted) ?? false;
      });
      return matching.length > 0 ? matching : defs;
    }
    default:
      return [];
  }
}

/** Keys allowed by the schema for the object at `path` of `root` (empty when unknown). */
export function knownKeysAt(schema: { _zod: { def: unknown } }, root: unknown, path: readonly PropertyKey[]): string[] {
  let defs = objectDefs(schema._zod.def as Def, root);
  let node = root;
  for (const segment of path) {
    node = valueAt(node, [segment]);
    const next: Def[] = [];
    for (const def of defs) {
      const child = typeof segment === 'number' ? undefined : def.shape?.[String(segment)];
      if (child) next.push(...childDefs(child._zod.def, node));
    }
    // Arrays: the element schema applies to numeric segments.
    if (typeof segment === 'number') {
      for (const def of defs) if (def.type === 'array' && def.element) next.push(...objectDefs(def.element._zod.def, node));
    }
    defs = next;
  }
  return [...new Set(defs.flatMap((d) => Object.keys(d.shape ?? {})))];
}

/** Like objectDefs, but keeps array definitions so that the next numeric segment can enter them. */
function childDefs(def: Def, input: unknown): Def[] {
  switch (def.type) {
    case 'array':
      return [def];
    case 'default':
    case 'prefault':
    case 'optional':
    case 'nullable':
      return def.innerType ? childDefs(def.innerType._zod.def, input) : [];
    case 'pipe':
      return [...(def.out ? childDefs(def.out._zod.def, input) : []), ...(def.in ? childDefs(def.in._zod.def, input) : [])];
    default:
      return objectDefs(def, input);
  }
}

/** Edit distance, for "did you mean" suggestions. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min((prev[j] as number) + 1, (cur[j - 1] as number) + 1, (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length] as number;
}

export function suggest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(word.length / 3)) + 1;
  for (const c of candidates) {
    const d = distance(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return typeof value;
}

const EXPECTED: Record<string, string> = {
  int: 'an integer',
  number: 'a number',
  string: 'a string',
  boolean: 'true or false',
  array: 'a list',
  object: 'a mapping',
};

function bound(issue: { origin?: string; inclusive?: boolean }, limit: unknown, above: boolean): string {
  const n = String(limit);
  switch (issue.origin) {
    case 'array':
    case 'set':
      return above ? `must have at most ${n} item(s)` : Number(limit) === 1 ? 'must not be empty' : `must have at least ${n} items`;
    case 'string':
      return above ? `must be at most ${n} characters` : Number(limit) === 1 ? 'must not be empty' : `must be at least ${n} characters`;
    default:
      if (above) return issue.inclusive === false ? `must be less than ${n}` : `must be at most ${n}`;
      return issue.inclusive === false ? `must be greater than ${n}` : `must be at least ${n}`;
  }
}

/** Converts zod issues (parsed against `root`) to ConfigIssues, one per problem. */
export function formatIssues(issues: readonly ZodIssue[], root: unknown, schema: { _zod: { def: unknown } }): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  for (const issue of issues) {
    const path = issue.path;
    const input = valueAt(root, path);
    switch (issue.code) {
      case 'unrecognized_keys': {
        const known = knownKeysAt(schema, root, path);
        for (const key of issue.keys) {
          const hint = suggest(key, known);
          out.push({
            path: formatPath([...path, key]),
            message: `unknown key${hint ? ` (did you mean "${hint}"?)` : known.length > 0 ? ` (allowed: ${known.join(', ')})` : ''}`,
          });
        }
        break;
      }
      case 'invalid_type':
        out.push({
          path: formatPath(path),
          message:
            input === undefined
              ? issue.message.startsWith('is required')
                ? issue.message // the schema's own hint
                : 'is required'
              : !issue.message.startsWith('Invalid input')
                ? issue.message // a message written in the schema
                : `expected ${EXPECTED[issue.expected] ?? issue.expected}, got ${typeName(input)}`,
        });
        break;
      case 'invalid_value':
        out.push({
          path: formatPath(path),
          message: !issue.message.startsWith('Invalid')
            ? issue.message
            : input === undefined
              ? `is required (one of ${issue.values.join(', ')})`
              : `must be ${issue.values.length === 1 ? JSON.stringify(issue.values[0]) : `one of ${issue.values.join(', ')}`}${typeof input === 'string' ? ` (got "${input}")` : ''}`
        });
        break;
      case 'invalid_union':
        if (issue.discriminator !== undefined) {
          const field = path[path.length - 1];
          const options = ('options' in issue ? (issue.options ?? []) : []).map(String);
          const got = typeof input === 'string' ? ` "${input}"` : '';
          out.push({
            path: formatPath(path),
            message: input === undefined ? `is required (one of ${options.join(', ')})` : `unknown ${String(field)}${got} (expected one of ${options.join(', ')})`,
          });
        } else {
          out.push({ path: formatPath(path), message: issue.message });
        }
        break;
      case 'too_small':
        out.push({ path: formatPath(path), message: bound(issue, issue.minimum, false) });
        break;
      case 'too_big':
        out.push({ path: formatPath(path), message: bound(issue, issue.maximum, true) });
        break;
      case 'invalid_format':
        out.push({
          path: formatPath(path),
          message: issue.message.startsWith('Invalid') ? `invalid ${issue.format === 'regex' ? 'value' : issue.format}` : issue.message,
        });
        break;
      default:
        out.push({ path: formatPath(path), message: issue.message });
    }
  }
  return out;
}
