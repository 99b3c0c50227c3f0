/**
 * `boxwatch notify-test [--notifier NAME] [--config FILE]`: sends a test message through every
 * configured notifier (or the named one) directly, without the outbox or retries, and prints one
 * line per notifier: `ok`, or the exact failure. Exit 1 if any failed (runCli prints `error [notify_test_failed]: ...`); an unknown `--notifier`
 * exits 2 listing the configured names. Failures are NotifyError messages, which never carry the
 * webhook URL or the SMTP password; as a second guard, every secret of the configured notifiers
 * is redacted from what is printed.
 *
 * `--render` sends nothing: it prints, per notifier, what would be sent for a sample alert group
 * (src/notify/sample.ts) with the configured templates (each request body, JSON pretty-printed;
 * the e-mail's subject and text; the console's lines). A template that fails to render prints a
 * warning on stderr and the default text is shown, as the daemon would send it.
 */
import { hostname } from 'node:os';
import type { Command } from 'commander';
import { loadConfig } from '../config/index.js';
import { BoxwatchError, UsageError } from '../errors.js';
import { redact } from '../redact.js';
import { notifierSecrets, notifiersFromConfig } from '../notify/from-config.js';
import { SAMPLE_FLEET, sampleMessage } from '../notify/sample.js';
import type { TemplateFailure } from '../notify/templates.js';
import { sendTestMessages } from '../notify/test-message.js';
import type { Notifier } from '../domain/notifications.js';
import { clockOf, type CliContext, type RegisterCommand } from './context.js';
import { formatTable } from './output.js';


export const registerNotifyTest: RegisterCommand = (program: Command, ctx: CliContext) => {
  program
    .command('notify-test')
    .description('send a test message through each configured notifier (or one) and report ok or the exact failure')
    .option('-n, --notifier <name>', 'only this notifier')
    .option('-c, --config <file>', 'configuration file')
    .option('--render', 'send nothing: print what would be sent for a sample alert group, templates applied')
    .action(async (opts: { notifier?: string; config?: string; render?: boolean }) => {
      const { config } = loadConfig({ path: opts.config, env: ctx.env });
      const names = config.notifiers.map((n) => n.name);
      if (names.length === 0) throw new UsageError('no notifiers are configured (see `notifiers:` in the configuration)');
      if (opts.notifier !== undefined && !names.includes(opts.notifier)) {
        throw new UsageError(`no notifier named "${opts.notifier}" (configured: ${names.join(', ')})`);
      }
      const secrets = config.notifiers.flatMap((n) => notifierSecrets(n));
      const safe = (text: string): string => redact(text, secrets);
      // The console notifier writes its test line to our output.
      const stdout = {
        write(chunk: string, callback?: (err?: Error | null) => void): boolean {
          ctx.out(safe(chunk));
          callback?.();
          return true;
        },
      };
      if (opts.render) {
        const onTemplateFailure = (f: TemplateFailure): void =>
          ctx.err(`warning: notifier "${f.notifier}": the ${f.part} template failed to render (${safe(f.error)}); the default text is shown\n`);
        const chosen = notifiersFromConfig(config.notifiers, { externalUrl: config.http.externalUrl, fleet: () => SAMPLE_FLEET, onTemplateFailure }).filter(
          (n) => opts.notifier === undefined || n.name === opts.notifier,
        );
        try {
          ctx.out(safe(renderPreviews(chosen, clockOf(ctx).now(), `boxwatch notify-test on ${hostname()}`)));
        } finally {
          await Promise.all(chosen.map((n) => n.close?.()));
        }
        return;
      }
      const notifiers = notifiersFromConfig(config.notifiers, { stdout });
      try {
        const results = await sendTestMessages(notifiers, { now: clockOf(ctx).now(), only: opts.notifier, source: `boxwatch notify-test on ${hostname()}`, signal: ctx.signal });
        const byName = new Map(results.map((r) => [r.notifier, r]));
        const rows = notifiers
          .filter((n) => byName.has(n.name))
          .map((n) => {
            const r = byName.get(n.name) as (typeof results)[number];
            return [n.name, n.type, r.ok ? 'ok' : `FAILED: ${safe(r.error ?? 'unknown error')}${r.retryable ? ' (temporary: try again later)' : ''}`];
          });
        ctx.out(formatTable(['NOTIFIER', 'TYPE', 'RESULT'], rows));
        const failed = results.filter((r) => !r.ok).length;
        // runCli prints this on stderr and exits 1.
        if (failed > 0) throw new BoxwatchError('notify_test_failed', `${failed} of ${results.length} notifier(s) failed`);
      } finally {
        await Promise.all(notifiers.map((n) => n.close?.()));
      }
    });
};

/** A body as people read it: JSON pretty-printed, anything else as it is. */
function readable(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

/** `== name (type) ==` and what the notifier would send for the sample group, per notifier. */
function renderPreviews(notifiers: readonly Notifier[], now: number, source: string): string {
  const message = sampleMessage(now, source);
  return notifiers
    .map((n) => {
      const parts = n.preview?.(message);
      const shown = parts === undefined ? ['(this channel cannot show a preview)'] : parts.length === 0 ? ['(nothing would be sent)'] : parts.map(readable);
      return `== ${n.name} (${n.type}) ==\n${shown.join('\n\n')}\n`;
    })
    .join('\n');
}
