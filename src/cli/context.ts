import type { Command } from 'commander';
import { systemClock, type Clock } from '../clock.js';

/** What a command needs from the outside world; tests pass their own. */
export interface CliContext {
  out(text: string): void;
  err(text: string): void;
  env: NodeJS.ProcessEnv;
  /** Aborted on SIGINT/SIGTERM; long-running commands (sim, run) stop when it fires. */
  signal: AbortSignal;
  /**
   * The real standard output, for commands that stream large output and must wait for a slow
   * reader (export); absent in tests, where `out` is used.
   */
  outStream?: NodeJS.WritableStream;
  /** True when stderr is a terminal (progress lines); absent means not. */
  errIsTTY?: boolean;
  /** True when stdout is a terminal (pretty logs, colours). */
  isTTY: boolean;
  /**
   * Subscribes to reload requests (SIGHUP in the executable); returns the unsubscribe function.
   * Absent where reloading makes no sense (most tests); `boxwatch run` then never reloads.
   */
  onReload?: (listener: () => void) => () => void;
  /** The time commands read ("now" of a window, a silence's start); the system clock when absent. */
  clock?: Clock;
}

/** The clock of a command: the context's, else the system clock. */
export function clockOf(ctx: CliContext): Clock {
  return ctx.clock ?? systemClock;
}

/** Each file in src/cli/ exports one of these and adds its command(s) to the program. */
export type RegisterCommand = (program: Command, ctx: CliContext) => void;

/** Waits until the signal fires (used by long-running commands). */
export function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
