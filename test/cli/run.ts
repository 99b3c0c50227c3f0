/** The shared in-process CLI runner (test/helpers/cli.ts) with every command registered. */
import { runCommand, type CliRun } from '../helpers/cli.js';

export type Run = CliRun;

export function run(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return runCommand(argv, env);
}
