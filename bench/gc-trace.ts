/**
 * What V8's garbage collector does during the floor bench's steady cycles: runs one fleet size of
 * bench/floor.bench.ts (its child part, with `--marks --stages`) under `--trace-gc-nvp` and sums, per side
 * (boxwatch's cycle, the floor's) and per cycle: the scavenges (young generation) and full
 * collections, their main-thread pauses, the bytes the JavaScript allocated, the bytes a scavenge
 * copied within the young generation and those it promoted to the old one. A scavenge costs what
 * it copies, and it comes after every semi-space's worth (16 MB here) of allocation: allocating less
 * means fewer scavenges, keeping less alive across one means less copied.
 *
 *   npm run build && node dist/bench/gc-trace.js [--boxes 10000] [--cycles 8] [--warmup 4 (as the floor bench)] [--trace FILE]
 *
 * A side's window runs from its mark to the other side's (the collection a cycle leaves behind is
 * its own, as in the floor bench). Allocated = heap in use at the window's end less at its start,
 * plus what each collection in it freed (V8's "allocated" of a collection is the growth since the
 * previous one). Then the same of boxwatch's stages (bench/stage-marks.ts): the client's device
 * list, the poller, the details requests, the history writer, the alert pipeline, the rest of the
 * store's commit, the app after it. Linux only (bench/traced-floor.ts). These COUNTS hold on a busy machine; the
 * pauses grow with its load.
 */
import { parseArgs } from 'node:util';
import { parseMark, traceFloorChild } from './traced-floor.js';

/** What one side's window saw (one cycle, or the sum of them). */
interface Tally {
  scavenges: number;
  fullGcs: number;
  pauseMs: number;
  allocated: number;
  /** Bytes a scavenge copied within the young generation (`new_space_survived`). */
  survived: number;
  promoted: number;
}

const tally = (): Tally => ({ scavenges: 0, fullGcs: 0, pauseMs: 0, allocated: 0, survived: 0, promoted: 0 });

/** One `--trace-gc-nvp` line's fields (`name=value`), or null when the line is not one. */
function nvp(line: string): Map<string, string> | null {
  if (!line.includes(' pause=')) return null;
  const fields = new Map<string, string>();
  for (const m of line.matchAll(/(\w+)=(\S+)/g)) fields.set(m[1] as string, m[2] as string);
  return fields;
}

/** A steady cycle's tallies: boxwatch's, the floor's, and boxwatch's by stage (bench/stage-marks.ts; `start` before the first). */
interface Cycle {
  bw: Tally;
  fl: Tally;
  stages: Map<string, Tally>;
}

/** Each steady cycle's tallies (warm-up cycles left out). */
function summarize(trace: readonly string[]): Cycle[] {
  const cycles: Cycle[] = [];
  /** Where the lines count now: a side's tally, and within boxwatch's window its stage's. */
  let current: Tally[] = [];
  let heapAtMark = 0;
  for (const line of trace) {
    const mark = parseMark(line);
    const stage = /^@@ stage (\w+) (\d+)$/.exec(line);
    if (mark !== null || stage !== null) {
      const heapUsed = mark?.heapUsed ?? Number(stage?.[2]);
      for (const t of current) t.allocated += heapUsed - heapAtMark;
      heapAtMark = heapUsed;
      const cycle = cycles.at(-1);
      if (stage !== null) {
        const name = stage[1] as string;
        if (cycle === undefined || current[0] !== cycle.bw) continue; // not in a steady cycle of boxwatch's
        const t = cycle.stages.get(name) ?? tally();
        cycle.stages.set(name, t);
        current = [cycle.bw, t];
      } else if (mark === null || mark.side === null || mark.cycle < 0) current = [];
      else if (mark.side === 'fl') current = cycle === undefined ? [] : [cycle.fl];
      else {
        const next: Cycle = { bw: tally(), fl: tally(), stages: new Map([['start', tally()]]) };
        cycles.push(next);
        current = [next.bw, next.stages.get('start') as Tally];
      }
      continue;
    }
    const gc = nvp(line);
    if (gc === null) continue;
    const n = (name: string): number => Number(gc.get(name) ?? 0);
    for (const t of current) {
      if (gc.get('gc') === 's') t.scavenges += 1;
      else t.fullGcs += 1;
      t.pauseMs += n('pause');
      t.allocated += n('total_size_before') - n('total_size_after');
      t.survived += n('new_space_survived');
      t.promoted += n('promoted');
    }
  }
  return cycles;
}

const mb = (bytes: number): string => (bytes / 1e6).toFixed(1);
const line = (t: Tally, n = 1): string =>
  `${(t.scavenges / n).toFixed(1)} scavenges, ${(t.fullGcs / n).toFixed(2)} full, pauses ${(t.pauseMs / n).toFixed(1)} ms; allocated ${mb(t.allocated / n)} MB, copied ${mb(t.survived / n)} MB, promoted ${mb(t.promoted / n)} MB`;

function sum(tallies: readonly Tally[]): Tally {
  const s = tally();
  for (const t of tallies) for (const key of Object.keys(s) as (keyof Tally)[]) s[key] += t[key];
  return s;
}

const { values } = parseArgs({
  options: {
    boxes: { type: 'string', default: '10000' },
    cycles: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '4' },
    trace: { type: 'string' },
  },
});
const cycles = summarize(traceFloorChild(['--trace-gc-nvp'], { ...values, stages: true }));
const n = cycles.length;
console.log(`${n} steady cycles of ${values.boxes} boxes; per cycle:`);
console.log(`  boxwatch: ${line(sum(cycles.map((c) => c.bw)), n)}`);
console.log(`  floor:    ${line(sum(cycles.map((c) => c.fl)), n)}`);
console.log('each cycle (boxwatch | floor):');
cycles.forEach((c, i) => console.log(`  ${i}: ${line(c.bw)} | ${line(c.fl)}`));
console.log("boxwatch's stages, per cycle (a collection counts in the stage it fell in):");
const stageNames = [...new Set(cycles.flatMap((c) => [...c.stages.keys()]))];
for (const name of stageNames) console.log(`  ${name.padEnd(8)} ${line(sum(cycles.map((c) => c.stages.get(name) ?? tally())), n)}`);
