/**
 * Key case conversion between the YAML form (snake_case) and the TypeScript form (camelCase).
 * The configuration has no user-chosen mapping keys, so every key is converted.
 */

export function snakeToCamel(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

export function camelToSnake(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

function mapKeys(value: unknown, rename: (key: string) => string): unknown {
  if (Array.isArray(value)) return value.map((v) => mapKeys(v, rename));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [rename(k), mapKeys(v, rename)]));
  }
  return value;
}

export const camelizeKeys = (value: unknown): unknown => mapKeys(value, snakeToCamel);
export const snakeKeys = (value: unknown): unknown => mapKeys(value, camelToSnake);
