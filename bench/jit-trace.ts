/**
 * What V8's optimizing compiler (TurboFan) does during the floor bench's steady cycles: runs one
 * fleet size of bench/floor.bench.ts (its child part, with `--marks`) under `--trace-opt
 * --trace-deopt-verbose`, cuts the trace into each side's windows (boxwatch's cycle, the floor's)
 * and sums, per side and per cycle, the compiles (how many, of them on-stack replacements, and
 * their compile time) and the deoptimizations; then boxwatch's compiles by function and its
 * deoptimizations by source position and reason. A cycle whose code V8 keeps optimized costs
 * little here after the first steady cycles; one that recompiles costs tens of ms of CPU per cycle
 * on V8's compiler thread.
 *
 *   npm run build && node dist/bench/jit-trace.js [--boxes 10000] [--cycles 12] [--warmup 4 (as the floor bench; 0 shows the first compiles too)] [--trace FILE]
 *   (--trace: where the raw trace goes; default a file in the temporary folder, removed after)
 *
 * Linux only (util-linux's `script`: bench/traced-floor.ts). Compile and deoptimization COUNTS hold on a busy machine; the milliseconds grow with its load.
 */
import { parseArgs } from 'node:util';
import { parseMark, traceFloorChild, type Side } from './traced-floor.js';

/** What one side did in its windows (one cycle, or all of them). */
interface Tally {
  compiles: number;
  osr: number;
  compileMs: number;
  deopts: number;
}

const tally = (): Tally => ({ compiles: 0, osr: 0, compileMs: 0, deopts: 0 });

/** The sums of a trace (the bench's output with V8's lines between its marks). */
interface JitSummary {
  /** Per steady cycle (in order, warm-up ones left out), each side's tally. */
  cycles: Record<Side, Tally>[];
  /** boxwatch's compiles by function name ('(anonymous)' for closures): count and ms. */
  byFunction: Map<string, { compiles: number; ms: number }>;
  /** boxwatch's deoptimizations by innermost source position and reason. */
  deoptSites: Map<string, number>;
}

const COMPILED = /^\[completed compiling .*?<JSFunction (\S*) ?\(sfi = \S+\)>.*took ([\d.]+), ([\d.]+), ([\d.]+) ms/;
const DEOPT = /^\[bailout \(kind: [^,]+, reason: ([^)]*)\): begin/;
const DEOPT_AT = /;;; deoptimize at <([^>]*)>/;

/** Sums a trace: V8's compile and deoptimization lines, cut by the bench's `@@` marks. */
function summarize(trace: readonly string[]): JitSummary {
  const summary: JitSummary = { cycles: [], byFunction: new Map(), deoptSites: new Map() };
  let current: Tally | null = null;
  let side: Side | null = null;
  let pendingDeopt: string | null = null; // the reason of a boxwatch deoptimization whose position is on a later line
  for (const line of trace) {
    const mark = parseMark(line);
    if (mark !== null) {
      side = mark.side;
      if (side === null || mark.cycle < 0) current = null; // the end, or a warm-up cycle: not counted
      else {
        if (side === 'bw') summary.cycles.push({ bw: tally(), fl: tally() });
        current = summary.cycles.at(-1)?.[side] ?? null;
      }
      continue;
    }
    if (current === null) continue;
    const compiled = COMPILED.exec(line);
    if (compiled !== null) {
      const ms = Number(compiled[2]) + Number(compiled[3]) + Number(compiled[4]);
      current.compiles += 1;
      current.compileMs += ms;
      if (line.includes('OSR')) current.osr += 1;
      if (side === 'bw') {
        const name = compiled[1] || '(anonymous)';
        const f = summary.byFunction.get(name) ?? { compiles: 0, ms: 0 };
        summary.byFunction.set(name, { compiles: f.compiles + 1, ms: f.ms + ms });
      }
      continue;
    }
    const deopt = DEOPT.exec(line);
    if (deopt !== null) {
      current.deopts += 1;
      if (side === 'bw') pendingDeopt = deopt[1] ?? '';
      continue;
    }
    const at = DEOPT_AT.exec(line);
    if (at !== null && pendingDeopt !== null) {
      const where = (at[1] ?? '').replace(/^file:\/\/.*?\/dist\//, '');
      const key = `${where} (${pendingDeopt})`;
      summary.deoptSites.set(key, (summary.deoptSites.get(key) ?? 0) + 1);
      pendingDeopt = null;
    }
  }
  return summary;
}

function sum(tallies: readonly Tally[]): Tally {
  return tallies.reduce((a, t) => ({ compiles: a.compiles + t.compiles, osr: a.osr + t.osr, compileMs: a.compileMs + t.compileMs, deopts: a.deopts + t.deopts }), tally());
}

function print(s: JitSummary): void {
  const n = s.cycles.length;
  const f0 = (x: number): string => x.toFixed(0);
  const line = (t: Tally): string => `${t.compiles} compiles (${t.osr} OSR), ${f0(t.compileMs)} ms compiling, ${t.deopts} deopts`;
  console.log(`${n} steady cycles`);
  for (const [name, side] of [
    ['boxwatch', 'bw'],
    ['floor', 'fl'],
  ] as const) {
    const all = sum(s.cycles.map((c) => c[side]));
    console.log(`${name}: ${line(all)}; per cycle ${f0(all.compileMs / Math.max(1, n))} ms compiling`);
  }
  console.log('per cycle (boxwatch | floor):');
  s.cycles.forEach((c, i) => console.log(`  ${i}: ${line(c.bw)} | ${line(c.fl)}`));
  console.log("boxwatch's compiles by function (ms, count):");
  for (const [name, f] of [...s.byFunction].sort((a, b) => b[1].ms - a[1].ms).slice(0, 25)) console.log(`  ${f0(f.ms).padStart(6)} ${String(f.compiles).padStart(3)}  ${name}`);
  console.log("boxwatch's deoptimizations by position (count):");
  for (const [site, count] of [...s.deoptSites].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${String(count).padStart(3)}  ${site}`);
}

const { values } = parseArgs({
  options: {
    boxes: { type: 'string', default: '10000' },
    cycles: { type: 'string', default: '12' },
    warmup: { type: 'string', default: '4' },
    trace: { type: 'string' },
  },
});
print(summarize(traceFloorChild(['--trace-opt', '--trace-deopt-verbose'], values)));
