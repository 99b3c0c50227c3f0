/**
 * The one glob matcher: box serial globs (`boxes:` of rules, notifiers and silences) and rule-name
 * globs (`rules:` of notifiers and silences). `*` matches any text, `?` one character, everything
 * else itself; the whole text must match; case-sensitive.
 * (node:path's matchesGlob is experimental on Node 20 and treats `/` specially, so not used.)
 */

const cache = new Map<string, RegExp>();

export function globToRegExp(glob: string): RegExp {
  let re = cache.get(glob);
  if (re === undefined) {
    let source = '';
    for (const ch of glob) {
      if (ch === '*') source += '.*';
      else if (ch === '?') source += '.';
      else source += ch.replace(/[\\^$.|+()[\]{}]/g, '\\$&');
    }
    re = new RegExp(`^${source}$`, 's');
    if (cache.size > 1000) cache.clear();
    cache.set(glob, re);
  }
  return re;
}

/** True when the text has a wildcard (`*` or `?`), i.e. is a pattern rather than a name. */
export function isGlob(text: string): boolean {
  return text.includes('*') || text.includes('?');
}

export function matchesGlob(serial: string, glob: string): boolean {
  return glob === '*' || globToRegExp(glob).test(serial);
}

/** True when the serial matches at least one glob (an empty list matches nothing). */
export function matchesAny(serial: string, globs: readonly string[]): boolean {
  for (const glob of globs) if (matchesGlob(serial, glob)) return true;
  return false;
}
