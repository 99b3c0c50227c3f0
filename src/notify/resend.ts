/**
 * The resender: for channels whose receiver forgets a firing alert it does not hear of again
 * (Alertmanager resolves an alert once its endsAt passes), sends the alerts that are still firing
 * every `resendIntervalMs` of that notifier, as Prometheus resends its firing alerts.
 *
 * A resend is a refresh, not a notification: it bypasses the outbox (nothing to keep after a
 * crash: the next interval sends the current state again), and a failed one is logged and
 * replaced by the next. Which alerts are firing is the caller's (`firing`): the stored alert states.
 */
import type { Awaitable } from '../awaitable.js';
import type { Clock } from '../clock.js';
import { abortWith } from '../abort.js';
import { errorMessage } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import type { AlertItem, Notifier } from '../domain/notifications.js';

export interface ResenderOptions {
  notifiers: readonly Notifier[];
  /** The firing alerts routed to `notifier` that it was told about, as `repeat` items. */
  firing: (notifier: string, now: number) => Awaitable<AlertItem[]>;
  clock: Clock;
  logger?: Logger;
  /** Aborts a send in flight at shutdown. */
  signal?: AbortSignal;
}

export class Resender {
  private readonly stopController = new AbortController();
  private loops: Promise<void>[] = [];

  constructor(private readonly options: ResenderOptions) {}

  /** The notifiers that want resends. */
  private get targets(): Notifier[] {
    return this.options.notifiers.filter((n) => (n.resendIntervalMs ?? 0) > 0);
  }

  /** Sends the firing alerts to one notifier now; false when the send failed (logged). */
  async resendOnce(notifier: Notifier): Promise<boolean> {
    const now = this.options.clock.now();
    let items: AlertItem[];
    try {
      items = await this.options.firing(notifier.name, now);
    } catch (err) {
      this.logger.error({ notifier: notifier.name, err: errorMessage(err) }, 'cannot read the firing alerts to resend');
      return false;
    }
    if (items.length === 0) return true;
    const send = new AbortController();
    const unlinkTimeout = abortWith(AbortSignal.timeout(60_000), send);
    const unlinkDaemon = abortWith(this.options.signal, send);
    try {
      await notifier.send({ kind: 'alert', items, createdAt: now }, send.signal);
      return true;
    } catch (err) {
      // NotifyError messages carry no secrets.
      this.logger.warn({ notifier: notifier.name, alerts: items.length, err: errorMessage(err) }, 'resending firing alerts failed; next try at the next interval');
      return false;
    } finally {
      unlinkTimeout();
      unlinkDaemon();
    }
  }

  start(): void {
    if (this.loops.length > 0) return;
    this.loops = this.targets.map((n) => this.loop(n));
  }

  async stop(): Promise<void> {
    this.stopController.abort();
    await Promise.all(this.loops);
    this.loops = [];
  }

  private get logger(): Logger {
    return this.options.logger ?? silentLogger;
  }

  private async loop(notifier: Notifier): Promise<void> {
    const interval = notifier.resendIntervalMs ?? 0;
    while (!this.stopController.signal.aborted) {
      try {
        await this.options.clock.sleep(interval, this.stopController.signal);
      } catch {
        return; // stopped
      }
      await this.resendOnce(notifier);
    }
  }
}
