/**
 * The one glob matcher: box serial globs (`boxes:` of rules, notifiers and silences, `export
 * --boxes`, the simulator's scenarios) and rule-name globs (`rules:` of notifiers and silences).
 * `*` matches any text, `?` one character, `[abc]` one of those, `[a-z]` one in the range, `[!x]`
 * (or `[^x]`) one character not listed; everything else itself; the whole text must match;
 * case-sensitive. A glob that is not well formed (`[` unclosed, a range backwards) is refused
 * where it is given (globProblem); one stored before classes existed matches as it did then
 * (its `[` and `]` themselves).
 * (node:path's matchesGlob is experimental on Node 20 and treats `/` specially, so not used.)
 */

const cache = new Map<string, RegExp>();

/** A character as a member of a regular-expression class. */
const classChar = (ch: string): string => (/[\\\]^[-]/.test(ch) ? `\\${ch}` : ch);

/** The regular-expression source of a glob (with `[...]` classes, or not), or what is wrong with it. */
function compile(glob: string, classes = true): { source: string } | { problem: string } {
  const chars = Array.from(glob);
  let source = '';
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i] as string;
    if (ch === '*') source += '.*';
    else if (ch === '?') source += '.';
    else if (ch === '[' && classes) {
      let j = i + 1;
      const negated = chars[j] === '!' || chars[j] === '^';
      if (negated) j++;
      const start = j;
      // A `]` first in the class is one of its members, as in the shell.
      if (chars[j] === ']') j++;
      while (j < chars.length && chars[j] !== ']') j++;
      if (j >= chars.length) return { problem: `"[" at position ${i + 1} is not closed by "]" (a character class is [abc], [a-z] or [!x])` };
      const members = chars.slice(start, j);
      let set = '';
      for (let k = 0; k < members.length; k++) {
        const from = members[k] as string;
        const to = members[k + 2];
        if (members[k + 1] === '-' && to !== undefined) {
          if (to.codePointAt(0)! < from.codePointAt(0)!) return { problem: `the range "${from}-${to}" is backwards` };
          set += `${classChar(from)}-${classChar(to)}`;
          k += 2;
        } else set += classChar(from);
      }
      source += `[${negated ? '^' : ''}${set}]`;
      i = j;
    } else source += ch.replace(/[\\^$.|+()[\]{}]/g, '\\$&');
  }
  return { source };
}

/** What is wrong with a glob (`glob "BX-[0-9": ...`), or undefined when it is well formed. */
export function globProblem(glob: string): string | undefined {
  const compiled = compile(glob);
  return 'problem' in compiled ? `glob "${glob}": ${compiled.problem}` : undefined;
}

/** The glob as a regular expression (one globProblem refuses: without classes). */
export function globToRegExp(glob: string): RegExp {
  let re = cache.get(glob);
  if (re === undefined) {
    let compiled = compile(glob);
    if ('problem' in compiled) compiled = compile(glob, false) as { source: string };
    re = new RegExp(`^${compiled.source}$`, 'su');
    if (cache.size > 1000) cache.clear();
    cache.set(glob, re);
  }
  return re;
}

/** True when the text has a wildcard (`*`, `?` or a `[` class), i.e. is a pattern rather than a name. */
export function isGlob(text: string): boolean {
  return text.includes('*') || text.includes('?') || text.includes('[');
}

export function matchesGlob(serial: string, glob: string): boolean {
  return glob === '*' || globToRegExp(glob).test(serial);
}

/** True when the serial matches at least one glob (an empty list matches nothing). */
export function matchesAny(serial: string, globs: readonly string[]): boolean {
  for (const glob of globs) if (matchesGlob(serial, glob)) return true;
  return false;
}
