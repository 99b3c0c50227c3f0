/**
 * Runs one fleet size of the floor bench (bench/floor.bench.ts, its child part with `--marks`)
 * under V8 trace flags, and cuts the trace into the sides' windows: boxwatch's steady cycle i runs
 * from the line `@@ bw i <heap>` to `@@ fl i <heap>`, the floor's from there to the next mark
 * (`<heap>`: the JavaScript heap in use, bytes, when the mark was written). Shared by
 * bench/jit-trace.ts (V8's compiler) and bench/gc-trace.ts (its garbage collector).
 *
 * Linux only: the child runs under util-linux's `script`, which gives it a terminal, so that V8's
 * trace (C's stdout) and the bench's marks (Node's) are both written line by line and stay in order.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type Side = 'bw' | 'fl';

/** A mark of the bench: a side's cycle starts (`cycle` negative: a warm-up one), or the last one ended (`side` null). */
export interface Mark {
  side: Side | null;
  cycle: number;
  /** The JavaScript heap in use when the mark was written (bytes). */
  heapUsed: number;
}

/** The mark a line of the trace is, or null. */
export function parseMark(line: string): Mark | null {
  const m = /^@@ (?:(bw|fl) (-?\d+)|end) (\d+)$/.exec(line);
  if (m === null) return null;
  return { side: (m[1] as Side | undefined) ?? null, cycle: Number(m[2] ?? 0), heapUsed: Number(m[3]) };
}

export interface TraceOptions {
  boxes: string;
  cycles: string;
  warmup: string;
  /** Where the raw trace goes; default a file in the temporary folder, removed after. */
  trace?: string;
  /** Also a mark as boxwatch's cycle enters each stage (the floor bench's `--stages`). */
  stages?: boolean;
}

/** The lines of the trace of one floor bench child run under `v8Flags` (without their line ends). */
export function traceFloorChild(v8Flags: readonly string[], options: TraceOptions): string[] {
  const floorBench = join(dirname(fileURLToPath(import.meta.url)), 'floor.bench.js');
  const scratch = options.trace === undefined ? mkdtempSync(join(tmpdir(), 'boxwatch-trace-')) : null;
  const traceFile = options.trace ?? join(scratch as string, 'trace.txt');
  try {
    const child = [process.execPath, '--expose-gc', ...v8Flags, floorBench, '--child-size', options.boxes, '--cycles', options.cycles, '--warmup', options.warmup, '--marks', ...(options.stages === true ? ['--stages'] : [])];
    // `script -qc CMD FILE`: CMD under a terminal, everything it writes into FILE (our own stdout is not wanted).
    const run = spawnSync('script', ['-qec', child.map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' '), traceFile], { stdio: ['ignore', 'ignore', 'inherit'] });
    if (run.error !== undefined || run.status !== 0) throw new Error(`the traced bench failed (${run.error?.message ?? `exit ${run.status}`}); it needs Linux and util-linux's script`);
    return readFileSync(traceFile, 'latin1')
      .split('\n')
      .map((line) => line.replace(/\r$/, ''));
  } finally {
    if (scratch !== null) rmSync(scratch, { recursive: true, force: true });
  }
}
