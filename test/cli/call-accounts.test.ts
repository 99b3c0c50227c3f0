/**
 * The call commands with several accounts (`gateways:`), through the BUILT CLI against the
 * multi-account simulator as an operator runs them (`boxwatch sim --accounts 2 --shared-serials`,
 * keys K-1 and K-2, the same serials BX-00001..3 in both accounts): `call --from ACCOUNT/SERIAL`,
 * `calls list --account` (each account's whole call list, as its gateway lists it), `calls show
 * ACCOUNT/ID` each go through that account's own gateway key;
 * several accounts and none named, an account not configured, and `test-call run --box` of an
 * account not configured are one line and exit 2 (the last without writing a row).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayClient } from '../../src/gateway/client.js';
import { ensureBuilt, MAIN } from '../e2e/build.js';
import { baseEnv, runBuilt } from '../helpers/cli-process.js';
import type { CliRun } from '../helpers/cli.js';
import { fileRows } from '../helpers/sqlite.js';

const PHONE = '+14155550177';
const ENV = { ACME_KEY: 'K-1', GLOBEX_KEY: 'K-2' };

let dir: string;
let sim: ChildProcess;
let cfg: string;
let dbPath: string;
let simUrl: string;

beforeAll(async () => {
  await ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-call-accounts-'));
  const scenario = join(dir, 'connected.yaml');
  writeFileSync(scenario, 'timeline:\n  - { at: 0s, box: "BX-*", connect: true }\n');
  sim = spawn(process.execPath, [MAIN, 'sim', '--port', '0', '--accounts', '2', '--devices', '3', '--shared-serials', '--key', 'K', '--scenario', scenario, '--account-scenario', `2=${scenario}`], {
    env: baseEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    sim.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1] as string);
    });
    sim.on('exit', (code) => reject(new Error(`simulator exited (${code}): ${out}`)));
  });
  simUrl = url;
  dbPath = join(dir, 'bw.db');
  cfg = join(dir, 'cfg.yaml');
  writeFileSync(
    cfg,
    `gateways:
  - { name: acme, base_url: "${url}", secret_key: "\${ACME_KEY}" }
  - { name: globex, base_url: "${url}", secret_key: "\${GLOBEX_KEY}" }
storage: { path: "${dbPath}" }
calls: {}
test_calls:
  - { name: path-check, boxes: ["BX-*"], to: "${PHONE}", agent: 101, schedule: "0 0 9 * * *", daily_cap: { per_box: 2, total: 4 } }
`,
  );
}, 120_000);

afterAll(() => {
  sim?.kill();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function boxwatch(...argv: string[]): Promise<CliRun> {
  const r = await runBuilt([...argv, '-c', cfg], { env: ENV });
  expect(r.out + r.err).not.toMatch(/K-\d/); // no account key in any output
  return r;
}

interface ListedCall {
  call_id: string;
  from: string;
  to: string;
  agent_id: number;
}

/** "CALL_ID TO" of every call the account's gateway lists, asked with the account's own key. */
async function gatewayCalls(key: string): Promise<string[]> {
  const client = createGatewayClient({ baseUrl: simUrl, secretKey: key, retries: 0 });
  try {
    const calls: string[] = [];
    for (let page = 1; ; page += 1) {
      const { items, meta } = await client.listCalls({ page });
      calls.push(...items.map((c) => `${c.call_id} ${c.to}`));
      if (!meta.has_next) return calls.sort();
    }
  } finally {
    await client.close();
  }
}

describe('call commands with several accounts', () => {
  it("`calls list --account` lists that account's calls as its gateway does, and only those", async () => {
    for (const [account, key] of [['acme', 'K-1'], ['globex', 'K-2']] as const) {
      const r = await boxwatch('calls', 'list', '--account', account, '--all', '--format', 'json');
      expect(r.code).toBe(0);
      const listed = (JSON.parse(r.out) as ListedCall[]).map((c) => `${c.call_id} ${c.to}`).sort();
      expect(listed.length).toBeGreaterThan(0);
      expect(listed).toEqual(await gatewayCalls(key));
    }
    // The two accounts number their calls from the same first id: the same id is another call.
    expect(await gatewayCalls('K-1')).not.toEqual(await gatewayCalls('K-2'));
  }, 60_000);

  it("`call --from ACCOUNT/SERIAL` places the call through that account's gateway; list and show read the account named", async () => {
    const placed = await boxwatch('call', '--from', 'globex/BX-00002', '--to', PHONE, '--agent', '103', '--format', 'json');
    expect(placed.code).toBe(0);
    const call = JSON.parse(placed.out) as ListedCall;
    expect(call).toMatchObject({ from: 'box:BX-00002', to: PHONE, agent_id: 103 });

    // globex's call list has it; acme's (the first account, the same serials) does not.
    const mine = (r: CliRun): ListedCall[] => (JSON.parse(r.out) as ListedCall[]).filter((c) => c.to === PHONE);
    const globex = await boxwatch('calls', 'list', '--account', 'globex', '--all', '--format', 'json');
    expect(globex.code).toBe(0);
    expect(mine(globex).map((c) => c.call_id)).toEqual([call.call_id]);
    const acme = await boxwatch('calls', 'list', '--account', 'acme', '--all', '--format', 'json');
    expect(acme.code).toBe(0);
    expect(mine(acme)).toEqual([]);
    // --box ACCOUNT/SERIAL names the account too.
    const byBox = await boxwatch('calls', 'list', '--box', 'globex/BX-00002', '--all', '--format', 'json');
    expect(byBox.code).toBe(0);
    expect(mine(byBox).map((c) => c.call_id)).toEqual([call.call_id]);

    // show: ACCOUNT/ID as the database and the API write it, or --account with the gateway's id.
    for (const args of [[`globex/${call.call_id}`], [call.call_id, '--account', 'globex']]) {
      const shown = await boxwatch('calls', 'show', ...args, '--format', 'json');
      expect(shown.code).toBe(0);
      expect(JSON.parse(shown.out)).toMatchObject({ call_id: call.call_id, to: PHONE, agent_id: 103 });
    }
    const other = await boxwatch('calls', 'show', `acme/${call.call_id}`, '--format', 'json');
    expect(other.out).not.toContain(PHONE); // acme's call of that id (or none) is not globex's
  }, 60_000);

  it.each([
    ['calls list without --account', ['calls', 'list'], /^error: --account is needed: the configuration has several accounts \(acme, globex\)\nsee boxwatch [a-z -]+ --help\n$/],
    ['calls show of a bare id', ['calls', 'show', '100001'], /^error: --account is needed: the configuration has several accounts \(acme, globex\)\nsee boxwatch [a-z -]+ --help\n$/],
    ['call from a bare serial', ['call', '--from', 'BX-00001', '--to', PHONE, '--agent', '101'], /^error: --account is needed: the configuration has several accounts \(acme, globex\)\nsee boxwatch [a-z -]+ --help\n$/],
    ['an account not configured', ['calls', 'list', '--account', 'nope'], /^error: --account nope is not an account of the configuration \(accounts: acme, globex\)\nsee boxwatch [a-z -]+ --help\n$/],
    ['call from a box of an account not configured', ['call', '--from', 'nope/BX-00001', '--to', PHONE, '--agent', '101'], /^error: account nope \(of nope\/BX-00001\) is not an account of the configuration \(accounts: acme, globex\)\nsee boxwatch [a-z -]+ --help\n$/],
    ['--account and the id of another', ['calls', 'show', 'acme/100001', '--account', 'globex'], /^error: acme\/100001 is of account acme, not of --account globex\nsee boxwatch [a-z -]+ --help\n$/],
    ['--account and a box of another', ['calls', 'list', '--account', 'acme', '--box', 'globex/BX-00001'], /^error: globex\/BX-00001 is of account globex, not of --account acme\nsee boxwatch [a-z -]+ --help\n$/],
  ])('%s: one line (and the help hint), exit 2', async (_name, argv, message) => {
    const r = await boxwatch(...argv);
    expect(r).toMatchObject({ code: 2, out: '' });
    expect(r.err).toMatch(message);
  }, 60_000);

  it('`test-call run --box` of an account not configured: one line, exit 2, no test call stored', async () => {
    const r = await boxwatch('test-call', 'run', '--box', 'nope/BX-00001');
    expect(r).toMatchObject({ code: 2, out: '' });
    expect(r.err).toBe('error: account nope (of --box nope/BX-00001) is not an account of the configuration (accounts: acme, globex)\nsee boxwatch test-call run --help\n');
    expect(fileRows(dbPath, 'SELECT * FROM test_calls')).toEqual([]);
    // The same box of a configured account is placed through that account.
    const ok = await boxwatch('test-call', 'run', '--box', 'globex/BX-00001');
    expect(ok.code).toBe(0);
    expect(ok.out).toMatch(/^test call globex\/\d+ placed from globex\/BX-00001 /);
    expect(fileRows<{ serial: string }>(dbPath, 'SELECT serial FROM test_calls')).toEqual([{ serial: 'globex/BX-00001' }]);
  }, 60_000);
});
