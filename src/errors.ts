/**
 * Error classes with a stable `code` and a `cause`. Nothing here ever carries the account
 * secret key or a webhook URL: callers pass only redacted text.
 */

export class BoxwatchError extends Error {
  readonly code: string;
  /** True when trying the same operation again may succeed (network, 5xx, 429). */
  readonly retryable: boolean;

  constructor(code: string, message: string, options: { cause?: unknown; retryable?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

/** A bad command-line argument: the CLI prints the message and a `see boxwatch COMMAND --help` hint, and exits 2. */
export class UsageError extends BoxwatchError {
  constructor(message: string) {
    super('usage', message);
  }
}

/** One problem in a configuration file, named by its path (`poll.details_every`). */
export interface ConfigIssue {
  path: string;
  message: string;
  /** The entry the path is in, by its name, when it has one: `rule "battery-low"`. */
  entry?: string;
}

/** An invalid configuration: every problem, each with the path of its field. */
/** Problems listed in a ConfigError's message at most; the rest are counted. */
export const MAX_LISTED_ISSUES = 20;

export class ConfigError extends BoxwatchError {
  readonly issues: ConfigIssue[];

  /** `message` replaces the "SOURCE is invalid:" listing (a missing file is not an invalid one). */
  constructor(issues: ConfigIssue[], source = 'configuration', message?: string) {
    const listed = issues.slice(0, MAX_LISTED_ISSUES).map((i) => `  ${i.path}${i.entry ? ` (${i.entry})` : ''}: ${i.message}`);
    if (issues.length > MAX_LISTED_ISSUES) listed.push(`  ... and ${issues.length - MAX_LISTED_ISSUES} more problems`);
    super('config_invalid', message ?? `${source} is invalid:\n${listed.join('\n')}`);
    this.issues = issues;
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
