/** Deep serialization of thrown values, to assert that a secret appears nowhere in them. */
import { inspect } from 'node:util';

/**
 * Every string reachable from `value` through own properties (enumerable or not, including
 * `message`, `stack` and the `cause` chain), plus util.inspect with hidden properties.
 */
export function deepText(value: unknown): string {
  const out: string[] = [inspect(value, { depth: 20, showHidden: true, getters: true })];
  const seen = new Set<unknown>();
  const walk = (v: unknown, depth: number): void => {
    if (depth > 20) return;
    if (typeof v === 'string') {
      out.push(v);
      return;
    }
    if ((typeof v !== 'object' && typeof v !== 'function') || v === null || seen.has(v)) return;
    seen.add(v);
    for (const key of Reflect.ownKeys(v)) {
      out.push(String(key));
      let child: unknown;
      try {
        child = (v as Record<PropertyKey, unknown>)[key];
      } catch {
        continue;
      }
      walk(child, depth + 1);
    }
  };
  walk(value, 0);
  return out.join('\n');
}

/** Runs `fn` and returns what it threw (fails if it did not throw). */
export async function caught(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}
