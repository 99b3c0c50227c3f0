/** Runs the CLI in-process, capturing stdout and stderr. */
import { runCli } from '../../src/cli/program.js';
import type { CliContext, RegisterCommand } from '../../src/cli/context.js';

export interface CliRun {
  code: number;
  out: string;
  err: string;
}

export async function runCommand(argv: string[], env: NodeJS.ProcessEnv = {}, commands?: RegisterCommand[]): Promise<CliRun> {
  let out = '';
  let err = '';
  const ctx: CliContext = {
    out: (s) => void (out += s),
    err: (s) => void (err += s),
    env,
    signal: new AbortController().signal,
    isTTY: false,
  };
  const code = await runCli(argv, ctx, commands ?? (await import('../../src/cli/index.js')).allCommands);
  return { code, out, err };
}
