/**
 * `boxwatch call --from SERIAL --to +E164 --agent ID`: places an outbound call. Following the
 * vendor's usage rule, it reads the box's details first and refuses (exit 1) when the box is not
 * connected. Bad arguments are UsageErrors (exit 2) and send no request.
 *
 * With `gateways:` the box is `ACCOUNT/SERIAL` (or `--account NAME` with a serial): the call is
 * placed through that account's gateway and key; several accounts and none named is exit 2.
 */
import { BoxwatchError, UsageError } from '../errors.js';
import { requireConnected } from '../calls/place.js';
import { E164 } from '../phone.js';
import type { CliContext, RegisterCommand } from './context.js';
import { accountOption, accountPart, boxSerial, configOption, gatewayOption, positiveInt, terminalSafe, withAccountGateway } from './call-gateway.js';
import { formatOption, formatTable, type OutputFormat } from './output.js';

interface CallOptions {
  from: string;
  account?: string;
  to: string;
  agent: string;
  gateway?: string;
  config?: string;
  format: OutputFormat;
}

export const registerCall: RegisterCommand = (program, ctx) => {
  program
    .command('call')
    .description('place an outbound AI-agent call through a box (checks that the box is connected first)')
    .requiredOption('--from <box>', 'the box to call from: SERIAL, box:SERIAL or ACCOUNT/SERIAL')
    .requiredOption('--to <number>', 'destination phone number in E.164 format, e.g. +14155550123')
    .requiredOption('--agent <id>', 'the AI agent that handles the call (integer id)')
    .addOption(accountOption())
    .addOption(gatewayOption())
    .addOption(configOption())
    .addOption(formatOption(['table', 'json']))
    .action((opts: CallOptions) => runCall(opts, ctx));
};

async function runCall(opts: CallOptions, ctx: CliContext): Promise<void> {
  const from = accountPart(opts.from);
  const serial = boxSerial(from.rest);
  if (serial === undefined) throw new UsageError(`--from must be a box serial, SERIAL, box:SERIAL or ACCOUNT/SERIAL (e.g. BX-00001), got "${terminalSafe(opts.from)}"`);
  if (!E164.test(opts.to)) {
    throw new UsageError(`--to must be an E.164 phone number (+ then 8 to 15 digits, e.g. +14155550123), got "${opts.to}"`);
  }
  const agentId = positiveInt(opts.agent, '--agent');
  const result = await withAccountGateway(opts, ctx.env, opts.from, async (client) => {
    await requireConnected(client, serial, { signal: ctx.signal }).catch((err: unknown) => {
      if (err instanceof BoxwatchError && err.code === 'box_disconnected') throw new BoxwatchError(err.code, `${err.message}; not placing the call`);
      throw err;
    });
    return client.makeCall({ from: `box:${serial}`, to: opts.to, agentId }, { signal: ctx.signal });
  });

  if (opts.format === 'json') {
    ctx.out(JSON.stringify(result, null, 2) + '\n');
    return;
  }
  ctx.out(
    formatTable(
      ['CALL ID', 'STATUS', 'FROM', 'TO', 'AGENT'],
      [[result.call_id, result.status, result.from, result.to, String(result.agent_id)].map(terminalSafe)],
    ),
  );
}
