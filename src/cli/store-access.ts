/** Opens the store named by the configuration for a read command, and closes it afterwards. */
import { loadConfig } from '../config/index.js';
import { openStore } from '../store/index.js';
import type { Store } from '../store/types.js';
import type { CliContext } from './context.js';

export async function withStore(configPath: string | undefined, ctx: CliContext, body: (store: Store, now: number) => void): Promise<void> {
  const { config } = loadConfig({ path: configPath, env: ctx.env });
  const store = openStore(config.storage.path, { readonly: true });
  try {
    body(store, Date.now());
  } finally {
    store.close();
  }
}
