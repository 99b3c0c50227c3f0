/** Shared bits of the operations tests: a CliContext the test controls, and waiting for output. */
import type { CliContext } from '../../src/cli/context.js';
import { until } from '../helpers/wait.js';

export interface TestContext extends CliContext {
  /** Everything written to stdout (JSON logs and console notifications), in order. */
  readonly stdout: string[];
  readonly stderr: string[];
  /** Sends a reload request, as SIGHUP does in the executable. */
  reload(): void;
  /** Stops a long-running command, as SIGTERM does. */
  abort(): void;
  /** stdout split into lines. */
  lines(): string[];
  /** The JSON log records written so far. */
  logs(): { level: number; msg: string; [key: string]: unknown }[];
}

export function testContext(env: NodeJS.ProcessEnv = {}): TestContext {
  const controller = new AbortController();
  const listeners = new Set<() => void>();
  const stdout: string[] = [];
  const stderr: string[] = [];
  const lines = (): string[] => stdout.join('').split('\n').filter(Boolean);
  return {
    stdout,
    stderr,
    out: (s) => void stdout.push(s),
    err: (s) => void stderr.push(s),
    env,
    signal: controller.signal,
    isTTY: false,
    onReload(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    reload() {
      for (const l of listeners) l();
    },
    abort() {
      controller.abort();
    },
    lines,
    logs() {
      return lines()
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { level: number; msg: string });
    },
  };
}

/** Resolves with the predicate's first truthy value; rejects after `timeoutMs` naming `what`. */
export async function waitFor<T>(what: string, predicate: () => T | undefined | null | false, timeoutMs = 10_000): Promise<T> {
  return (await until(what, predicate, { timeoutMs })) as T;
}
