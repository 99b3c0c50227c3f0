/**
 * The one YAML reader (configuration, rule test files, simulator scenarios): duplicate keys are
 * errors, syntax errors name line and column, and a document whose aliases expand without bound
 * (a "billion laughs" bomb) is refused. Problems are one ConfigError for `source`.
 */
import { parseDocument } from 'yaml';
import { ConfigError, errorMessage } from './errors.js';

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
  try {
    return doc.toJS({ maxAliasCount: MAX_YAML_ALIASES }) ?? {};
  } catch (err) {
    // A document whose aliases expand without bound (a "billion laughs" YAML bomb).
    throw new ConfigError([{ path: 'yaml', message: `refused: its aliases expand to more than ${MAX_YAML_ALIASES} nodes (${errorMessage(err)})` }], source);
  }
}

/** Alias expansions a YAML document may make (the `yaml` library's guard against YAML bombs). */
export const MAX_YAML_ALIASES = 1_000;

