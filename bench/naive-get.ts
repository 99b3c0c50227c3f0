/**
 * The floor's gateway request (bench/floor.bench.ts, bench/client.bench.ts): a GET over undici's
 * Pool, the body parsed with `JSON.parse`, nothing checked: the same HTTP stack as the gateway
 * client, without its checks, retries and deadlines.
 */
import type { Pool } from 'undici';
import { API_PREFIX } from '../src/gateway/messages.js';

/** GETs `path` (after the API prefix) and parses its body; a request that fails is sent again, twice at most. */
export async function naiveGetJson(pool: Pool, key: string, path: string): Promise<{ data: never }> {
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await pool.request({ path: API_PREFIX + path, method: 'GET', headers: { 'account-secret-key': key } });
      return JSON.parse(await res.body.text()) as { data: never };
    } catch (err) {
      // A keep-alive connection the simulator closed as it was reused: sent again, as any poller would.
      if (attempt === 3) throw err;
    }
  }
}
