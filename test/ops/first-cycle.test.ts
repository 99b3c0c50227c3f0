/**
 * `boxwatch run` tells the executable when its first poll cycle is done (`afterFirstCycle`, where
 * the executable lets V8's young generation grow again: src/young-generation.ts): once, after the
 * first cycle is recorded, not before it and not again, a reload included. In-process through
 * runCli, against the simulator over real HTTP, on a real SQLite file.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { allCommands } from '../../src/cli/index.js';
import { runCli } from '../../src/cli/program.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/server.js';
import { testContext, waitFor } from './helpers.js';

const KEY = 'ops-first-cycle-key';

let dir: string;
let sim: RunningSimulator;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'boxwatch-first-cycle-'));
  sim = await startSimulator({ port: 0, key: KEY, devices: 3, seed: 5 });
});

afterEach(async () => {
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The cycles the daemon recorded, read with a connection of our own. */
function recordedCycles(path: string): number {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM cycles').get() as { n: number }).n;
  } catch {
    return 0; // not migrated yet
  } finally {
    db.close();
  }
}

it('calls afterFirstCycle once, when the first cycle is recorded, and not again after more cycles and a reload', async () => {
  const dbPath = join(dir, 'boxwatch.db');
  const path = join(dir, 'boxwatch.yaml');
  writeFileSync(
    path,
    `gateway: { base_url: "${sim.url}", secret_key: "\${KEY}" }
poll: { schedule: "* * * * * *" }
storage: { path: "${dbPath}" }
http: false
log: { level: info }
`,
  );
  const cyclesAtCall: number[] = [];
  const ctx = { ...testContext({ KEY }), afterFirstCycle: () => void cyclesAtCall.push(recordedCycles(dbPath)) };
  const run = runCli(['run', '--config', path], ctx, allCommands);
  try {
    await waitFor('the daemon to poll', () => ctx.logs().find((l) => l.msg === 'boxwatch polling'));
    expect(cyclesAtCall).toEqual([]); // started, no cycle yet

    await waitFor('the first cycle', () => cyclesAtCall.length > 0);
    expect(cyclesAtCall).toEqual([1]);

    ctx.reload(); // a new app on the same configuration: its first cycle is not the daemon's
    await waitFor('the reload', () => ctx.logs().some((l) => l.msg === 'configuration reloaded'));
    const before = recordedCycles(dbPath);
    await waitFor('two more cycles', () => recordedCycles(dbPath) >= before + 2);
    expect(cyclesAtCall).toEqual([1]);
  } finally {
    ctx.abort();
    expect(await run).toBe(0);
  }
});
