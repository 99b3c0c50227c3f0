/**
 * The executable loads only the command its first word names (src/cli/index.ts): each entry of the
 * table must register the command of that name, or `boxwatch <name>` would answer "unknown
 * command"; every other first word gets all of them, so the help lists every command.
 */
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/program.js';
import { commandModules, loadCommands } from '../../src/cli/index.js';
import type { CliContext } from '../../src/cli/context.js';

const ctx: CliContext = { out: () => undefined, err: () => undefined, env: {}, signal: new AbortController().signal, isTTY: false };

describe('the command table', () => {
  it('loads, for each command name, the module that registers that command', async () => {
    for (const { name } of commandModules) {
      const program = buildProgram(ctx, await loadCommands([name, '--help']));
      expect(program.commands.map((c) => c.name())).toEqual([name]);
    }
  });

  it('loads every command, in the table order, for the help and for a word that names none', async () => {
    const names = commandModules.map((c) => c.name);
    for (const argv of [['--help'], [], ['stauts']]) {
      expect(buildProgram(ctx, await loadCommands(argv)).commands.map((c) => c.name())).toEqual(names);
    }
  });
});
