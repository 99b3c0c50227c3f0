/**
 * The executable's hold on V8's young generation (src/young-generation.ts), on the Node that runs
 * the tests: held, a burst of surviving objects leaves the young generation at its first size;
 * released, the same burst grows it as far as in a process that never held it. A Node whose V8
 * stops taking the hold at run time fails here, not silently in the daemon's memory figures.
 * Each case is a new node process (a young generation at its first size) on the built module,
 * with the young generation's largest size pinned (`--max-semi-space-size=16`, V8's default on a
 * machine with a few GiB of memory or more), so that the figures do not depend on this machine's.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './e2e/build.js';

const MODULE = pathToFileURL(join(ROOT, 'dist/src/young-generation.js')).href;

/**
 * Runs `steps` (the body of an async function) in a new node process, where `young()` is the young
 * generation's size in bytes, `burst()` allocates 300,000 objects that survive, `sleep(ms)` waits
 * and `yg` is the module; returns what `steps` returns.
 */
function inNewProcess<T>(steps: string): T {
  const script = `
    import v8 from 'node:v8';
    const yg = await import(${JSON.stringify(MODULE)});
    const young = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
    const kept = [];
    const burst = () => { for (let i = 0; i < 300000; i++) kept.push({ i, text: 'box ' + i }); };
    const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
    console.log(JSON.stringify(await (async () => { ${steps} })()));`;
  const out = execFileSync(process.execPath, ['--max-semi-space-size=16', '--input-type=module', '-e', script], { encoding: 'utf8' });
  return JSON.parse(out) as T;
}

const MiB = 1024 * 1024;

describe('the young generation hold', () => {
  /** How far the burst grows the young generation of a process that never held it (measured once). */
  let control: { start: number; grown: number };
  beforeAll(() => {
    control = inNewProcess('const start = young(); burst(); return { start, grown: young() };');
  });

  it('keeps the young generation small through a burst that grows it without the hold, and lets it grow as far once released', () => {
    expect(control.grown).toBeGreaterThanOrEqual(8 * control.start); // the burst is enough to grow it

    const held = inNewProcess<{ held: number; released: number }>(
      'yg.holdYoungGeneration(); burst(); const held = young(); yg.releaseYoungGeneration(); burst(); return { held, released: young() };',
    );
    expect(held.held).toBeLessThanOrEqual(2 * MiB);
    expect(held.released).toBe(control.grown);
  });

  it("after start-up: boxwatch run keeps the hold until its time is up, any other command lets go at once", () => {
    const { grown } = control;
    const run = inNewProcess<{ during: number; after: number }>(
      "yg.holdYoungGeneration(); yg.releaseAfterStart('run', 300); burst(); const during = young(); await sleep(400); burst(); return { during, after: young() };",
    );
    expect(run.during).toBeLessThanOrEqual(2 * MiB);
    expect(run.after).toBe(grown);

    const status = inNewProcess<number>("yg.holdYoungGeneration(); yg.releaseAfterStart('status'); burst(); return young();");
    expect(status).toBe(grown);
  });
});
