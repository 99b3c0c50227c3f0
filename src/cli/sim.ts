/**
 * `boxwatch sim`: runs the Gateway API simulator until interrupted. Prints exactly one line,
 * `gateway simulator listening on http://HOST:PORT`, once it accepts connections. `--accounts N`
 * serves N accounts (keys `KEY-1` ... `KEY-N`), each with its own fleet (src/sim/accounts.ts).
 */
import { BoxwatchError, UsageError } from '../errors.js';
import type { Scenario } from '../sim/scenario.js';
import { DEV_KEY } from '../sim/dev-key.js';
import { untilAborted, type RegisterCommand } from './context.js';

interface SimFlags {
  host: string;
  port: string;
  key?: string;
  devices?: string;
  seed?: string;
  scenario?: string;
  speed?: string;
  accounts?: string;
  sharedSerials?: boolean;
  accountScenario: string[];
}

/** The most accounts one simulator serves. */
const MAX_ACCOUNTS = 100;

function integer(flag: string, text: string, min: number, max: number): number {
  if (!/^-?\d+$/.test(text.trim())) throw new UsageError(`${flag} must be an integer, got "${text}"`);
  const n = Number(text);
  if (n < min || n > max) throw new UsageError(`${flag} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function positive(flag: string, text: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n <= 0 || n > 100_000) throw new UsageError(`${flag} must be a number above 0 (at most 100000), got "${text}"`);
  return n;
}

export const registerSim: RegisterCommand = (program, ctx) => {
  program
    .command('sim')
    .description('Run the Gateway API simulator (a fleet of simulated boxes behind /api/gateway/v1).')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--port <port>', 'port to listen on (0 picks a free one)', '8080')
    .option('--key <key>', `account secret key (default: $BOXWATCH_SECRET_KEY, else the development key)`)
    .option('--devices <n>', 'number of boxes (default 50, or the scenario\'s)')
    .option('--seed <n>', 'seed of the fleet model (default 1, or the scenario\'s)')
    .option('--scenario <file>', 'YAML timeline of box events and faults')
    .option('--speed <n>', 'simulated seconds per real second (default 1, or the scenario\'s)')
    .option('--accounts <n>', 'number of accounts, each with its own fleet of --devices boxes and key KEY-1 ... KEY-N (default 1: the key itself)')
    .option('--shared-serials', 'every account\'s serials start with BX- (the same serial in several accounts)')
    .option('--account-scenario <n=file>', 'a scenario for account n (repeatable; --scenario is account 1\'s)', (v: string, list: string[]) => [...list, v], [])
    .action(async (flags: SimFlags) => {
      const port = integer('--port', flags.port, 0, 65_535);
      const devices = flags.devices === undefined ? undefined : integer('--devices', flags.devices, 0, 100_000);
      const seed = flags.seed === undefined ? undefined : integer('--seed', flags.seed, -2_147_483_648, 2_147_483_647);
      const speed = flags.speed === undefined ? undefined : positive('--speed', flags.speed);
      if (flags.host.trim() === '') throw new UsageError('--host must not be empty');
      if (flags.key !== undefined && flags.key === '') throw new UsageError('--key must not be empty');
      const accounts = flags.accounts === undefined ? 1 : integer('--accounts', flags.accounts, 1, MAX_ACCOUNTS);
      const accountScenarios = new Map<number, string>();
      for (const text of flags.accountScenario) {
        const m = /^(\d+)=(.+)$/.exec(text);
        if (!m) throw new UsageError(`--account-scenario must be N=FILE, got "${text}"`);
        const n = integer('--account-scenario', m[1] as string, 1, accounts);
        if (n === 1 && flags.scenario !== undefined) throw new UsageError('--account-scenario 1=... and --scenario both name account 1\'s scenario');
        accountScenarios.set(n, m[2] as string);
      }
      const key = flags.key ?? (ctx.env.BOXWATCH_SECRET_KEY || DEV_KEY);
      // The simulator is loaded when it runs, not by every command (`run`).
      const { loadScenario } = await import('../sim/scenario.js');
      const { startSimulator } = await import('../sim/server.js');
      const scenario: Scenario | undefined = flags.scenario === undefined ? undefined : await loadScenario(flags.scenario);
      const perAccount = await Promise.all(
        Array.from({ length: accounts }, async (_, i) => {
          const file = accountScenarios.get(i + 1);
          return file === undefined ? {} : { scenario: await loadScenario(file) };
        }),
      );

      let running;
      try {
        running = await startSimulator({
          host: flags.host,
          port,
          key,
          ...(devices !== undefined && { devices }),
          ...(seed !== undefined && { seed }),
          ...(speed !== undefined && { speed }),
          ...(scenario && { scenario }),
          ...(accounts > 1 || accountScenarios.size > 0 ? { accounts: perAccount } : {}),
          ...(flags.sharedSerials === true && { sharedSerials: true }),
          onError: (err) => ctx.err(`simulator: unexpected error: ${err instanceof Error ? err.message : String(err)}\n`),
        });
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') {
          throw new BoxwatchError('listen_failed', `cannot listen on ${flags.host}:${port} (${code})`, { cause: err });
        }
        throw err;
      }
      ctx.out(`gateway simulator listening on ${running.url}\n`);
      await untilAborted(ctx.signal);
      await running.close();
    });
};
