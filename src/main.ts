#!/usr/bin/env node
/** The `boxwatch` executable: wires process I/O and signals to the CLI. */
import { allCommands } from './cli/index.js';
import { runCli } from './cli/program.js';

const controller = new AbortController();
let signals = 0;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    signals += 1;
    if (signals > 1) process.exit(130); // a second Ctrl-C does not wait
    controller.abort(new Error(`received ${sig}`));
  });
}

/**
 * SIGHUP becomes a reload request, but only while a command listens for one (`boxwatch run`):
 * every other command keeps the default (a hangup ends it).
 */
const reloadListeners = new Set<() => void>();
const onSighup = (): void => {
  for (const listener of reloadListeners) listener();
};
function onReload(listener: () => void): () => void {
  if (reloadListeners.size === 0) process.on('SIGHUP', onSighup);
  reloadListeners.add(listener);
  return () => {
    reloadListeners.delete(listener);
    if (reloadListeners.size === 0) process.off('SIGHUP', onSighup);
  };
}

/**
 * The reader of our output went away (`boxwatch calls show 1 | head -1`): a normal end of the
 * command, as for any Unix tool, not a crash with a stack trace. Any other output error is one.
 */
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
});

const code = await runCli(
  process.argv.slice(2),
  {
    out: (s) => process.stdout.write(s),
    err: (s) => process.stderr.write(s),
    env: process.env,
    signal: controller.signal,
    outStream: process.stdout,
    errIsTTY: Boolean(process.stderr.isTTY),
    isTTY: Boolean(process.stdout.isTTY),
    onReload,
  },
  allCommands,
);
process.exitCode = code;
