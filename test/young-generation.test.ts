/**
 * The executable's hold on V8's young generation (src/young-generation.ts), on the Node that runs
 * the tests: held, a burst of surviving objects leaves the young generation at its first size;
 * released, the same burst grows it as it grows a process that never held it. A Node whose V8
 * stops taking the hold at run time fails here, not silently in the daemon's memory figures.
 * Each case is a new node process (a young generation at its first size) on the built module.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ROOT } from './e2e/build.js';

const MODULE = pathToFileURL(join(ROOT, 'dist/src/young-generation.js')).href;

/**
 * Runs `steps` in a new node process, where `young()` is the young generation's size in bytes,
 * `burst()` allocates 300,000 objects that survive, and `yg` is the module; prints what it returns.
 */
function inNewProcess<T>(steps: string): T {
  const script = `
    import v8 from 'node:v8';
    const yg = await import(${JSON.stringify(MODULE)});
    const young = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
    const kept = [];
    const burst = () => { for (let i = 0; i < 300000; i++) kept.push({ i, text: 'box ' + i }); };
    console.log(JSON.stringify(await (async () => { ${steps} })()));`;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as T;
}

const MiB = 1024 * 1024;

describe('the young generation hold', () => {
  it('keeps the young generation small through a burst that grows it in a process without the hold, and lets it grow once released', () => {
    const control = inNewProcess<{ start: number; grown: number }>('const start = young(); burst(); return { start, grown: young() };');
    expect(control.grown).toBeGreaterThanOrEqual(8 * control.start); // the burst is enough to grow it

    const held = inNewProcess<{ start: number; held: number; released: number }>(
      'const start = young(); yg.holdYoungGeneration(); burst(); const held = young(); yg.releaseYoungGeneration(); burst(); return { start, held, released: young() };',
    );
    expect(held.held).toBeLessThanOrEqual(2 * MiB);
    expect(held.released).toBeGreaterThanOrEqual(8 * held.held);
  });

  it('after start-up: boxwatch run keeps the hold (its release is timed), any other command lets go at once', () => {
    /** The young generation's size after the hold, the release of `command`'s start-up and a burst. */
    const afterStart = (command: string): number => inNewProcess(`yg.holdYoungGeneration(); yg.releaseAfterStart(${JSON.stringify(command)}); burst(); return young();`);
    expect(afterStart('run')).toBeLessThanOrEqual(2 * MiB);
    expect(afterStart('status')).toBeGreaterThan(8 * MiB);
  });
});
