/**
 * Keeping secrets out of what boxwatch prints, logs and stores: `redact` for text holding known
 * secrets, `redactUrl` for showing a configured URL, and `safeCause` for errors (library and
 * driver errors can carry URLs, passwords or request options in their fields, so they are never
 * passed on as they are). Redact before truncating: a secret cut in half is no longer found.
 */

export const REDACTED = '[redacted]';

/**
 * Replaces every occurrence of the given secrets (and their URL-encoded and decoded forms) in
 * `text` by REDACTED. Secrets shorter than 4 characters are ignored (they would mangle ordinary words).
 */
export function redact(text: string, secrets: readonly string[]): string {
  const variants = new Set<string>();
  for (const s of secrets) {
    if (s.length < 4) continue;
    variants.add(s);
    variants.add(encodeURIComponent(s));
    try {
      variants.add(decodeURIComponent(s));
    } catch {
      // not URL-encoded
    }
  }
  // Longest first, so that a URL is replaced as a whole before its parts.
  let out = text;
  for (const v of [...variants].filter((v) => v.length >= 4).sort((a, b) => b.length - a.length)) {
    out = out.split(v).join(REDACTED);
  }
  return out;
}

const SECRET_QUERY = /pass|secret|token|key/i;

/** Replaces the password (and secret-looking query values) of a URL; leaves the rest readable. */
export function redactUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return REDACTED; // not a URL: nothing safe to show
  }
  const user = url.username !== '' ? `${url.username}${url.password !== '' ? `:${REDACTED}` : ''}@` : url.password !== '' ? `:${REDACTED}@` : '';
  const query = [...url.searchParams.entries()]
    .map(([k, v]) => `${encodeURIComponent(k)}=${SECRET_QUERY.test(k) ? REDACTED : encodeURIComponent(v)}`)
    .join('&');
  // new URL() adds a "/" path to http URLs; show it only when it was written.
  const path = url.pathname === '/' && !text.endsWith('/') && !text.includes('/?') ? '' : url.pathname;
  return `${url.protocol}//${user}${url.host}${path}${query ? `?${query}` : ''}`;
}

/** The secrets contained in a URL: the whole URL, its password, user:password, path, query, long path segments and query values. */
export function urlSecrets(url: string): string[] {
  const secrets = [url];
  try {
    const u = new URL(url);
    if (u.password) secrets.push(u.password, `${u.username}:${u.password}`);
    if (u.pathname.length > 1) secrets.push(u.pathname + u.search);
    if (u.search.length > 1) secrets.push(u.search);
    for (const segment of u.pathname.split('/')) if (segment.length >= 8) secrets.push(segment);
    for (const value of u.searchParams.values()) if (value.length >= 8) secrets.push(value);
  } catch {
    // not a URL: the whole text is the secret
  }
  return secrets;
}

/** A plain error with the same name, code and message (redacted): no other fields survive. */
export class SafeCause extends Error {
  readonly code: string | undefined;
  constructor(name: string, message: string, code: string | undefined, cause: SafeCause | undefined) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = name;
    this.code = code;
    this.stack = `${name}: ${message}`;
  }
}

/**
 * Rebuilds an error's cause chain (up to 4 levels) from names, messages and string codes only,
 * redacting the secrets: what to attach as the `cause` of our own errors instead of a library's.
 */
export function safeCause(err: unknown, secrets: readonly string[]): SafeCause {
  return copyError(err, secrets, 0) ?? new SafeCause('Error', String(err), undefined, undefined);
}

function copyError(err: unknown, secrets: readonly string[], depth: number): SafeCause | undefined {
  if (err === undefined || err === null || depth > 3) return undefined;
  if (!(err instanceof Error)) return new SafeCause('Error', redact(String(err), secrets), undefined, undefined);
  const code = (err as { code?: unknown }).code;
  return new SafeCause(err.name, redact(err.message, secrets), typeof code === 'string' ? code : undefined, copyError(err.cause, secrets, depth + 1));
}
