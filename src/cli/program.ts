import { Command, CommanderError } from 'commander';
import { BoxwatchError, ConfigError, UsageError, errorMessage } from '../errors.js';
import { GatewayError } from '../gateway/errors.js';
import type { CliContext, RegisterCommand } from './context.js';
import { VERSION } from '../version.js';

const commands: RegisterCommand[] = [];

/** Exit codes: 0 ok, 1 operational failure, 2 bad usage or bad configuration. */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

export function buildProgram(ctx: CliContext, register: RegisterCommand[] = commands): Command {
  const program = new Command('boxwatch')
    .description('Watch a fleet of telephony boxes through the Gateway API: history, alerts, notifications.')
    .version(VERSION)
    .showHelpAfterError('see boxwatch --help')
    .configureOutput({ writeOut: (s) => ctx.out(s), writeErr: (s) => ctx.err(s) })
    .exitOverride();
  for (const add of register) add(program, ctx);
  // Subcommands inherit output and exit handling.
  const inherit = (cmd: Command): void => {
    for (const sub of cmd.commands) {
      sub.configureOutput({ writeOut: (s) => ctx.out(s), writeErr: (s) => ctx.err(s) });
      sub.exitOverride();
      sub.showHelpAfterError(`see ${commandPath(sub)} --help`);
      inherit(sub);
    }
  };
  inherit(program);
  return program;
}

/** `boxwatch silence add`: the command's full name, for "see ... --help" hints. */
function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** Runs the CLI in-process and returns the exit code. Never throws. */
export async function runCli(argv: string[], ctx: CliContext, register?: RegisterCommand[]): Promise<number> {
  const program = buildProgram(ctx, register);
  let active: Command = program;
  program.hook('preAction', (_this, actionCommand) => {
    active = actionCommand;
  });
  try {
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT_OK;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') {
        return EXIT_OK;
      }
      return EXIT_USAGE; // commander already printed the message and the help hint
    }
    if (err instanceof UsageError) {
      ctx.err(`error: ${err.message}\nsee ${commandPath(active)} --help\n`);
      return EXIT_USAGE;
    }
    if (err instanceof ConfigError) {
      ctx.err(`error: ${err.message}\n`);
      return EXIT_USAGE;
    }
    const code = err instanceof BoxwatchError ? ` [${err.code}]` : '';
    const hint = err instanceof GatewayError ? GATEWAY_HINTS[err.code] : undefined;
    ctx.err(`error${code}: ${errorMessage(err)}\n${hint === undefined ? '' : `${hint}\n`}`);
    return EXIT_FAILURE;
  }
}

/** What to do next when a command's gateway request failed, by error code. */
const GATEWAY_HINTS: Partial<Record<string, string>> = {
  unauthorized: 'the gateway refused the account key: check gateway.secret_key in the configuration, usually taken from the BOXWATCH_SECRET_KEY environment variable',
  unavailable: 'the gateway did not answer: check gateway.base_url in the configuration (or --gateway, BOXWATCH_GATEWAY_URL) and that it is reachable from here',
};

export function registerCommands(...adds: RegisterCommand[]): void {
  commands.push(...adds);
}
