/**
 * `boxwatch box forget SERIAL`: a decommissioned box leaves the fleet. Its history stays (history,
 * uptime and export still read it); it leaves `status`, /metrics and the API, and its open alerts
 * resolve at the daemon's next cycle (RESOLVED is sent for those that were announced). If the
 * gateway lists it again, it is part of the fleet again. Only a box missing from the device list
 * can be forgotten (one still listed would come back at the next poll). The missing rule's
 * `forget_after` does the same automatically (docs/alerting.md).
 */
import type { Command } from 'commander';
import { UsageError } from '../errors.js';
import { isoTime } from '../time-format.js';
import { terminalSafe } from './call-gateway.js';
import type { CliContext, RegisterCommand } from './context.js';
import { boxIdArgument, dbOption, withStore } from './store-access.js';

export const registerBox: RegisterCommand = (program: Command, ctx: CliContext) => {
  const box = program.command('box').description('manage the boxes the daemon knows');
  box
    .command('forget')
    .description('forget a decommissioned box: it leaves status and its alerts resolve; its history is kept')
    .argument('<serial>', 'serial of a box missing from the device list (see `boxwatch status`); ACCOUNT/SERIAL when several accounts have it')
    .option('-c, --config <file>', 'configuration file')
    .addOption(dbOption())
    .action((input: string, opts: { config?: string; db?: string }) =>
      withStore(
        opts,
        ctx,
        async (store, now) => {
          const serial = (await boxIdArgument(store, input)) ?? input;
          const found = await store.box(serial);
          const name = terminalSafe(serial);
          if (found === undefined) throw new UsageError(`no box "${name}" in the database (see \`boxwatch status\`)`);
          if (found.missingSince === null) {
            throw new UsageError(`box ${name} is still in the gateway's device list (last polled ${isoTime(found.lastPolled)}): it would come back at the next poll`);
          }
          if ((await store.forgetBoxes([serial], now)) === 0) {
            ctx.out(`box ${name} was already forgotten; nothing changed\n`);
            return;
          }
          ctx.out(`forgot box ${name} (missing since ${isoTime(found.missingSince)}); its history is kept, its alerts resolve at the daemon's next cycle\n`);
        },
        { write: true },
      ),
    );
};
