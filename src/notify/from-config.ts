/** Builds the configured notifiers (the `notifiers:` section, as loaded by src/config). */
import type { Config } from '../config/index.js';
import type { LineSink } from './console.js';
import { createNotifier } from './index.js';
import type { Notifier } from './types.js';

export function notifiersFromConfig(entries: Config['notifiers'], deps: { stdout?: LineSink } = {}): Notifier[] {
  return entries.map((n) => {
    switch (n.type) {
      case 'email':
        return createNotifier({ name: n.name, type: 'email', smtp_url: n.smtpUrl, from: n.from, to: n.to });
      case 'slack':
        return createNotifier({ name: n.name, type: 'slack', webhook_url: n.webhookUrl });
      case 'console':
        return createNotifier({ name: n.name, type: 'console' }, deps);
    }
  });
}
