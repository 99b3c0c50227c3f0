/**
 * `boxwatch test-call run [--entry NAME] [--box SERIAL]`: places one test call now, as the
 * entry's schedule would (docs/calls.md, "Test calls"): within its daily caps, counted in the
 * daemon's database (safe while the daemon runs), and only from a connected box. Says in one
 * line what it did; exit 1 with the reason when no call was placed (cap reached, box not
 * connected, make-call refused), exit 2 for a bad argument or configuration.
 */
import { Option } from 'commander';
import { systemClock } from '../clock.js';
import { maskNumber } from '../calls/privacy.js';
import { createTestCalls } from '../calls/test-calls.js';
import { loadConfig, type TestCallConfig } from '../config/index.js';
import { BoxwatchError, UsageError } from '../errors.js';
import { matchesAny } from '../glob.js';
import { silentLogger } from '../log.js';
import { openDataStore } from '../store/index.js';
import { boxSerial, configOption, resolveGateway, terminalSafe, withGateway } from './call-gateway.js';
import type { CliContext, RegisterCommand } from './context.js';

interface RunOptions {
  entry?: string;
  box?: string;
  config?: string;
}

export const registerTestCall: RegisterCommand = (program, ctx) => {
  const cmd = program.command('test-call').description('test calls (test_calls: in the configuration)');
  cmd
    .command('run')
    .description('place one test call now, within the daily caps, from a connected box')
    .addOption(new Option('--entry <name>', 'the test_calls entry (needed when there are several)'))
    .addOption(new Option('--box <serial>', 'the box to call from (default: the connected box of the entry with the fewest test calls today)'))
    .addOption(configOption())
    .action((opts: RunOptions) => runTestCall(opts, ctx));
};

async function runTestCall(opts: RunOptions, ctx: CliContext): Promise<void> {
  const serial = opts.box === undefined ? undefined : boxSerial(opts.box);
  if (opts.box !== undefined && serial === undefined) throw new UsageError(`--box must be a box serial, SERIAL or box:SERIAL (e.g. BX-00001), got "${opts.box}"`);
  const { config } = loadConfig({ path: opts.config, env: ctx.env, uses: ['gateway', 'poll', 'calls', 'storage', 'test_calls'] });
  const entries = config.testCalls ?? [];
  const entry = pickEntry(entries, opts.entry);
  if (serial !== undefined && !matchesAny(serial, entry.boxes)) {
    throw new UsageError(`box ${serial} is not selected by test call ${entry.name} (boxes: ${entry.boxes.join(', ')})`);
  }
  const store = await openDataStore(config.storage);
  try {
    const attempt = await withGateway(resolveGateway({ config: opts.config }, ctx.env), (client) =>
      createTestCalls({ entries, repo: store.testCalls, boxes: () => store.boxes(), client, clock: systemClock, logger: silentLogger, concurrency: 1 }).runOne(entry, serial, ctx.signal),
    );
    const caps = entry.dailyCap;
    switch (attempt.outcome) {
      case 'placed':
        ctx.out(
          `test call ${terminalSafe(attempt.callId)} placed from ${attempt.serial} to ${maskNumber(entry.to)} (agent ${entry.agent}, entry ${entry.name}; ` +
            `today ${attempt.used.box} of ${caps.perBox} from this box, ${attempt.used.total} of ${caps.total} in all)\n`,
        );
        return;
      case 'rejected':
        throw new BoxwatchError('make_call_failed', `test call from ${attempt.serial} not placed: ${attempt.reason} (its slot of today's cap stays used)`);
      case 'skipped':
        throw new BoxwatchError(attempt.skip === 'cap' ? 'cap_reached' : attempt.skip === 'disconnected' ? 'box_disconnected' : 'not_placed', `test call from ${attempt.serial} not placed: ${attempt.reason}`);
    }
  } finally {
    await store.close();
  }
}

function pickEntry(entries: readonly TestCallConfig[], name: string | undefined): TestCallConfig {
  if (entries.length === 0) throw new UsageError('the configuration has no test_calls: entries');
  const names = entries.map((e) => e.name).join(', ');
  if (name === undefined) {
    if (entries.length > 1) throw new UsageError(`--entry is needed: the configuration has several test_calls entries (${names})`);
    return entries[0] as TestCallConfig;
  }
  const entry = entries.find((e) => e.name === name);
  if (entry === undefined) throw new UsageError(`--entry ${JSON.stringify(name)} is not a test_calls entry (${names})`);
  return entry;
}
