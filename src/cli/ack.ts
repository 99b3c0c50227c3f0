/**
 * `boxwatch ack ALERT [BOX] --comment TEXT [--for 4h] [--by NAME]`: acknowledges a firing alert:
 * its id (`rule/serial`), or its RULE and BOX as `boxwatch alerts` shows them, the box named as
 * in every command (`ACCOUNT/SERIAL`, or a serial one account has; several: exit 2 naming them),
 * resolved by `findAlert` (src/alerts/acks.ts), as the API's acks are. The daemon reads acks at every cycle: from its
 * next cycle the alert's repeat notifications stop until it resolves (the resolve is still sent,
 * and says who acknowledged it), its severity rises, or `--for` ends (src/alerts/acks.ts).
 * Opens the existing database read-write, like `silence add`; a bad argument exits 2 and writes
 * nothing.
 */
import type { Command } from 'commander';
import { ackFromRequest } from '../alerts/acks.js';
import { alertId } from '../alerts/types.js';
import { STORE_SECTIONS, loadConfig } from '../config/index.js';
import { formatTime, isoTime } from '../time-format.js';
import { ackJson } from '../views/acks.js';
import { terminalSafe } from './call-gateway.js';
import type { CliContext, RegisterCommand } from './context.js';
import { formatOption, type OutputFormat } from './output.js';
import { withStore } from './store-access.js';

interface AckOptions {
  comment?: string;
  for?: string;
  by?: string;
  config?: string;
  format: OutputFormat;
}

export const registerAck: RegisterCommand = (program: Command, ctx: CliContext) => {
  program
    .command('ack')
    .description('acknowledge a firing alert: its repeat notifications stop until it resolves, its severity rises, or --for ends')
    .argument('<alert>', 'the alert: rule/serial (the rule alone for a gateway alert), or the RULE with BOX after it')
    .argument('[box]', 'the box, as `boxwatch alerts` shows it: ACCOUNT/SERIAL or a serial one account has; `gateway` or an account name for a gateway alert')
    .option('--comment <text>', 'what is being done (required)')
    .option('--for <duration>', 'how long, e.g. 4h (default: until the alert resolves)')
    .option('--by <name>', 'who (default $USER)')
    .addOption(formatOption(['table', 'json']))
    .option('-c, --config <file>', 'configuration file')
    .action((alert: string, box: string | undefined, opts: AckOptions) => {
      const { config } = loadConfig({ path: opts.config, env: ctx.env, uses: STORE_SECTIONS });
      const by = opts.by ?? ctx.env['USER'] ?? ctx.env['LOGNAME'] ?? 'unknown';
      return withStore(
        { loaded: config },
        ctx,
        async (store, now, { alerts }) => {
          const input = ackFromRequest({ alert, ...(box !== undefined && { box }), comment: opts.comment, for: opts.for, by }, (await alerts.states()).values(), now);
          const ack = await store.acks.add(input);
          if (opts.format === 'json') {
            ctx.out(JSON.stringify({ now: isoTime(now), ack: ackJson(ack) }, null, 2) + '\n');
            return;
          }
          const until = ack.until === null ? 'until it resolves' : `until ${formatTime(ack.until)} (or until it resolves)`;
          ctx.out(`acknowledged ${terminalSafe(alertId(ack.rule, ack.serial))} by ${terminalSafe(ack.by)}: no repeat notifications ${until}; a higher severity ends the ack\n`);
        },
        { write: true },
      );
    });
};
