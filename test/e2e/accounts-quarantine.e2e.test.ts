/**
 * Invalid gateway records of several accounts (test/e2e/accounts-rig.ts: two simulators over real
 * HTTP with the same serials): each account sets its own records aside and says so once, with its
 * `account` in the log line; the same serial's bad record in another account is not hidden by the
 * first one's.
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { startAccountsRig, type AccountsRig } from './accounts-rig.js';

let rig: AccountsRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

describe('invalid records of two accounts', () => {
  it('are logged once per account and serial, each line naming its account', async () => {
    const logs: Record<string, unknown>[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) logs.push(JSON.parse(line) as Record<string, unknown>);
        callback();
      },
    });
    const r = (rig = await startAccountsRig({ logger: createLogger({ destination }) }));
    // BX-00001's details break the schema in both accounts (a mistyped battery level)
    for (const sim of [r.acme, r.globex]) sim.sim.inject({ endpoints: ['device_details'], schemaViolation: true });
    r.clock.advance(10 * 60_000); // every box's details are due again
    await r.cycle();
    await r.cycle();
    const setAside = logs.filter((l) => String(l['msg']).startsWith('invalid gateway record set aside'));
    const byAccount = new Map<string, number>();
    for (const l of setAside) byAccount.set(String(l['account']), (byAccount.get(String(l['account'])) ?? 0) + 1);
    expect([...byAccount.keys()].sort()).toEqual(['acme', 'globex']);
    // once per serial and account, not once per cycle: the same serials in both accounts
    expect(byAccount.get('acme')).toBe(byAccount.get('globex'));
    expect(setAside.filter((l) => l['account'] === 'acme').map((l) => l['serial']).sort()).toEqual(setAside.filter((l) => l['account'] === 'globex').map((l) => l['serial']).sort());
  });
});
