/**
 * Reads the CPU profiles the floor bench writes with `--profile DIR` and prints, per profile (one
 * cycle), the busy time and the self time of the functions that took most of it, garbage
 * collection included. The inspector's own work of stopping the profiler (`dispatch`) and the idle
 * time between cycles are left out.
 *
 *   node dist/bench/profile-summary.js DIR [--prefix boxwatch-10000-] [--top 30]
 */
import { readFileSync, readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

/** Not the cycle's work: time between cycles, and the inspector answering the profiler's stop. */
const LEFT_OUT = new Set(['(idle)', 'dispatch']);

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { prefix: { type: 'string', default: 'boxwatch-10000-' }, top: { type: 'string', default: '30' } },
});
const dir = positionals[0];
if (dir === undefined) throw new Error('usage: profile-summary DIR [--prefix NAME] [--top N]');
const files = readdirSync(dir).filter((f) => f.startsWith(values.prefix) && f.endsWith('.cpuprofile'));
if (files.length === 0) throw new Error(`no ${values.prefix}*.cpuprofile in ${dir}`);

const self = new Map<string, number>();
let busy = 0;
for (const file of files) {
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  profile.samples.forEach((id, i) => {
    const frame = frames.get(id);
    if (frame === undefined || LEFT_OUT.has(frame.functionName)) return;
    const us = profile.timeDeltas[i] ?? 0;
    const name = `${frame.functionName || '(anonymous)'}${frame.url === '' ? '' : ` ${basename(frame.url)}:${frame.lineNumber + 1}`}`;
    self.set(name, (self.get(name) ?? 0) + us);
    busy += us;
  });
}
const perCycleMs = (us: number): string => (us / 1000 / files.length).toFixed(1).padStart(7);
console.log(`${files.length} profiles (${values.prefix}*): busy ${perCycleMs(busy).trim()} ms per cycle; self time per cycle:`);
for (const [name, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) {
  console.log(`${perCycleMs(us)} ms ${((100 * us) / busy).toFixed(1).padStart(5)} %  ${name}`);
}
