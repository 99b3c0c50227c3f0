/**
 * Bytes the device list's validation allocates: `parseDeviceRecords` (the gateway client's zod
 * parse of the list's records) over the simulator's list of N boxes, the heap in use before and
 * after one call, warmed up first. Run it with a young generation large enough that no collection
 * falls inside the call (BENCHMARKS.md, "Diagnostic tools"):
 *
 *   npm run build && node --expose-gc --max-semi-space-size=512 --min-semi-space-size=512 dist/bench/zod-alloc.js [--boxes 10000]
 */
import { parseArgs } from 'node:util';
import { parseDeviceRecords } from '../src/gateway/client.js';
import { Fleet } from '../src/sim/fleet.js';

const { values } = parseArgs({ options: { boxes: { type: 'string', default: '10000' } } });
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run node with --expose-gc');
const body = new Fleet({ devices: Number(values.boxes), seed: 1, start: Date.now() }).deviceListBody();
const records = (): unknown[] => (JSON.parse(body) as { data: unknown[] }).data;
for (let i = 0; i < 30; i++) parseDeviceRecords(records());
const input = records();
gc();
const before = process.memoryUsage().heapUsed;
const parsed = parseDeviceRecords(input);
const after = process.memoryUsage().heapUsed;
console.log(`parseDeviceRecords of ${values.boxes} records: ${((after - before) / 1e6).toFixed(1)} MB allocated (${parsed.devices.length} valid)`);
