/**
 * Reads the allocation profiles the floor bench writes with `--profile DIR` (V8's sampling heap
 * profiler, every allocation of a cycle kept, also those a collection freed) and prints, per cycle:
 * the bytes allocated, by stage of boxwatch's cycle, and the functions that allocated most (self).
 *
 *   node dist/bench/heap-summary.js DIR [--prefix boxwatch-10000-] [--top 25]
 *
 * The stages of a boxwatch cycle, by the innermost of these functions on the allocation's stack:
 * the client's validation of the device list (`parseDeviceRecords`), the poller (`pollGateway` and
 * its helpers), the history writer (`record` of src/store/history/writer.ts and the SQLite writer),
 * the alert pipeline (`decide`), the rest of the store's `commitCycle`. What none of
 * these is on the stack of is the client's and node:http's (an asynchronous callback's stack
 * starts at the event loop): the device list request and its JSON.parse up to the validation's
 * last allocation, the details requests after it until the commit, then the app's work after the
 * commit (the profile's `ordinal`: the allocations' order).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children: ProfileNode[];
}

interface HeapProfile {
  head: ProfileNode;
  samples: { size: number; nodeId: number; ordinal: number }[];
}

/** The floor bench's sampling interval (bytes): a sample of `size` bytes stands for size / (1 - e^(-size/interval)) bytes. */
const SAMPLING_INTERVAL = 4096;

const STAGES = {
  validation: 'client: device list validation (zod)',
  list: 'client: device list request and JSON.parse',
  details: 'client: details requests (HTTP, JSON.parse, zod)',
  poller: 'poller (known boxes, details due, snapshots, missing)',
  writer: 'history writer',
  alerts: 'alert pipeline (rules, engine)',
  commit: 'store commit (the rest: view, alert states, transitions)',
  after: 'app after the commit',
} as const;
type Stage = keyof typeof STAGES;

/** The stage a frame marks, if any. */
function stageOf(frame: ProfileNode['callFrame']): Stage | null {
  const file = frame.url;
  switch (frame.functionName) {
    case 'parseDeviceRecords':
      return 'validation';
    case 'pollGateway':
    case 'pollDeviceList':
    case 'addDetails':
    case 'knownBoxes':
    case 'snapshotsOf':
    case 'leftAndBack':
    case 'selectForDetails':
      return 'poller';
    case 'record':
      if (file.endsWith('/history/writer.js') || file.endsWith('/sqlite/writer.js')) return 'writer';
      break;
    case 'decide':
      if (file.endsWith('/alerts/pipeline.js')) return 'alerts';
      break;
    case 'commitCycle':
      return 'commit';
  }
  return null;
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { prefix: { type: 'string', default: 'boxwatch-10000-' }, top: { type: 'string', default: '25' } },
});
const dir = positionals[0];
if (dir === undefined) throw new Error('usage: heap-summary DIR [--prefix NAME] [--top N]');
const files = readdirSync(dir).filter((f) => f.startsWith(values.prefix) && f.endsWith('.heapprofile'));
if (files.length === 0) throw new Error(`no ${values.prefix}*.heapprofile in ${dir}`);

const byStage = new Map<Stage, number>();
const self = new Map<string, number>();
let total = 0;
for (const file of files) {
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as HeapProfile;
  const nodes = new Map<number, { frame: ProfileNode['callFrame']; stage: Stage | null }>();
  const walk = (node: ProfileNode, stage: Stage | null): void => {
    const own = stageOf(node.callFrame) ?? stage; // the innermost marking frame wins
    nodes.set(node.id, { frame: node.callFrame, stage: own });
    for (const child of node.children) walk(child, own);
  };
  walk(profile.head, null);
  const samples = [...profile.samples].sort((a, b) => a.ordinal - b.ordinal);
  const stageAt = samples.map((s) => nodes.get(s.nodeId)?.stage ?? null);
  const lastValidation = stageAt.lastIndexOf('validation');
  const firstCommit = stageAt.indexOf('commit');
  samples.forEach((sample, i) => {
    const bytes = sample.size / (1 - Math.exp(-sample.size / SAMPLING_INTERVAL));
    const stage = stageAt[i] ?? (i < lastValidation ? 'list' : firstCommit === -1 || i < firstCommit ? 'details' : 'after');
    byStage.set(stage, (byStage.get(stage) ?? 0) + bytes);
    const frame = nodes.get(sample.nodeId)?.frame;
    const name = frame === undefined ? '(unknown)' : `${frame.functionName || '(anonymous)'}${frame.url === '' ? '' : ` ${basename(frame.url)}:${frame.lineNumber + 1}`}`;
    self.set(name, (self.get(name) ?? 0) + bytes);
    total += bytes;
  });
}
const perCycle = (bytes: number): string => (bytes / 1e6 / files.length).toFixed(2).padStart(6);
console.log(`${files.length} profiles (${values.prefix}*): allocated ${perCycle(total).trim()} MB per cycle; by stage:`);
for (const stage of Object.keys(STAGES) as Stage[]) console.log(`${perCycle(byStage.get(stage) ?? 0)} MB  ${STAGES[stage]}`);
console.log('by function (self), MB per cycle:');
for (const [name, bytes] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) console.log(`${perCycle(bytes)} MB  ${name}`);
