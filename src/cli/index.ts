/** Every command of the CLI, in the order `--help` lists them. One file per command. */
import type { RegisterCommand } from './context.js';

export const allCommands: RegisterCommand[] = [];
