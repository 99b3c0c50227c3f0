/**
 * `boxwatch test-call run [--entry NAME] [--box SERIAL]`: places one test call now, as the
 * entry's schedule would (docs/calls.md, "Test calls"): within its daily caps, counted in the
 * daemon's database (safe while the daemon runs), and only from a connected box. Says in one
 * line what it did; exit 1 with the reason when no call was placed (cap reached, box not
 * connected, make-call refused), exit 2 for a bad argument or configuration.
 *
 * With `gateways:` (several accounts) the box is named as everywhere (src/box-id.ts):
 * `ACCOUNT/SERIAL`, or a bare serial when one account has it; the call is placed through the
 * box's own account, with its key from the configuration.
 */
import { Option } from 'commander';
import { maskNumber } from '../calls/privacy.js';
import { createTestCalls } from '../calls/test-calls.js';
import { loadConfig, type TestCallConfig } from '../config/index.js';
import { BoxwatchError, UsageError } from '../errors.js';
import { accountOf, boxMatches } from '../box-id.js';
import { silentLogger } from '../log.js';
import { openDataStore } from '../store/index.js';
import { accountClients, accountPart, accountSettings, boxSerial, configOption, pickAccount, terminalSafe } from './call-gateway.js';
import { clockOf, type CliContext, type RegisterCommand } from './context.js';
import { boxIdArgument } from './store-access.js';

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
    .addOption(new Option('--box <serial>', 'the box to call from, ACCOUNT/SERIAL or a serial (default: the connected box of the entry with the fewest test calls today)'))
    .addOption(configOption())
    .action((opts: RunOptions) => runTestCall(opts, ctx));
};

async function runTestCall(opts: RunOptions, ctx: CliContext): Promise<void> {
  const given = opts.box === undefined ? undefined : boxArgument(opts.box);
  if (opts.box !== undefined && given === undefined) throw new UsageError(`--box must be a box serial, SERIAL, ACCOUNT/SERIAL or box:SERIAL (e.g. BX-00001), got "${opts.box}"`);
  const { config } = loadConfig({ path: opts.config, env: ctx.env, uses: ['gateway', 'gateways', 'poll', 'calls', 'storage', 'test_calls'] });
  const entries = config.testCalls ?? [];
  const entry = pickEntry(entries, opts.entry);
  const store = await openDataStore(config.storage);
  // One client per account, made when its first box is called from (the address and key of a
  // single gateway: as every call command takes them: --gateway, BOXWATCH_SECRET_KEY, the file).
  const { clientOf, close } = accountClients((account) => accountSettings(config.gateways, { config: opts.config }, ctx.env, account));
  try {
    const serial = given === undefined ? undefined : ((await boxIdArgument(store, given)) ?? given);
    // A box of an account not configured here is a bad argument: one line, exit 2, nothing stored.
    if (serial !== undefined) pickAccount(config.gateways, accountOf(serial), `account ${accountOf(serial)} (of --box ${serial})`);
    if (serial !== undefined && !boxMatches(serial, entry.boxes)) {
      throw new UsageError(`box ${terminalSafe(serial)} is not selected by test call ${entry.name} (boxes: ${entry.boxes.join(', ')})`);
    }
    const attempt = await createTestCalls({ entries, repo: store.testCalls, boxes: () => store.boxes(), clientOf, clock: clockOf(ctx), logger: silentLogger, concurrency: 1 }).runOne(entry, serial, ctx.signal);
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
    await close();
    await store.close();
  }
}

/** `--box`: `ACCOUNT/SERIAL` as it is, else the serial of `SERIAL` or `box:SERIAL`. */
function boxArgument(text: string): string | undefined {
  const { account, rest } = accountPart(text);
  const serial = boxSerial(rest);
  return serial === undefined || account === undefined ? serial : `${account}/${serial}`;
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
