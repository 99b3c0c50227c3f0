/**
 * The gateway client's CPU per request against the floor's (issue 14): boxwatch's client
 * (src/gateway/client.ts: undici's Pool, timeouts, retries, bounded reads, zod) and the floor's bare
 * request (bench/naive-get.ts: undici's Pool and `JSON.parse`) fetch the same device details and
 * device lists from a simulator process, in the same process, in alternating rounds, so that the
 * ratio holds on a shared machine where the absolute times do not.
 *
 * Per round: DETAILS device-details requests at concurrency 16 by boxwatch's client (given one
 * signal for all of them, as a poll cycle gives its requests) and the same by the floor's; then
 * LISTS device lists by each; which side goes first alternates from round to round. Each side's
 * CPU is this process's (all threads) over its work and a scavenge at its end (`gc({ type:
 * 'minor' })`, with --expose-gc, as `npm run bench` runs it), so the young garbage it leaves is
 * collected on its own clock, not the other side's. The first round warms both up and is not
 * counted.
 *
 *   npm run build && node --expose-gc dist/bench/client.bench.js [--boxes 10000] [--details 5000]
 *     [--lists 3] [--rounds 8] [--json FILE]
 *   (npm run bench -- client: the defaults)
 */
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { createGatewayClient } from '../src/gateway/client.js';
import { mapWithConcurrency } from '../src/poller/pool.js';
import { mean, measure } from './measure.js';
import { naiveGetJson } from './naive-get.js';
import { startSimProcess } from './sim-process.js';

const KEY = 'bench-client-key';
const CONCURRENCY = 16;

const { values } = parseArgs({
  options: {
    boxes: { type: 'string', default: '10000' },
    details: { type: 'string', default: '5000' },
    lists: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '8' },
    json: { type: 'string' },
  },
});
const boxes = Number(values.boxes);
const details = Number(values.details);
const lists = Number(values.lists);
const rounds = Number(values.rounds);

const sim = await startSimProcess(boxes, KEY);
const client = createGatewayClient({ baseUrl: sim.url, secretKey: KEY, connections: CONCURRENCY });
const pool = new Pool(new URL(sim.url).origin, { connections: CONCURRENCY, pipelining: 1 });
const cycle = new AbortController();
const serials = (await client.listDevices()).devices.map((d) => d.serial_no).slice(0, details);

/** µs of CPU per detail request, and ms of CPU per device list (mean of the round's), of each side per counted round. */
const perRequest = { boxwatch: [] as number[], floor: [] as number[] };
const perList = { boxwatch: [] as number[], floor: [] as number[] };
const gc = (globalThis as { gc?: (options: { type: 'minor' }) => void }).gc;
if (gc === undefined) console.warn('run with node --expose-gc: without it the garbage one side leaves is collected in the other side\'s time');
/** CPU ms of `work` and of collecting the young garbage it left. */
const cpuOf = async (work: () => Promise<unknown>): Promise<number> =>
  (
    await measure(async () => {
      await work();
      gc?.({ type: 'minor' });
    })
  ).cpuMs;
for (let round = 0; round <= rounds; round++) {
  const times = Array.from({ length: lists });
  const boxwatchDetails = (): Promise<number> => cpuOf(() => mapWithConcurrency(serials, CONCURRENCY, (s) => client.getDevice(s, { signal: cycle.signal })));
  const floorDetails = (): Promise<number> => cpuOf(() => mapWithConcurrency(serials, CONCURRENCY, (s) => naiveGetJson(pool, KEY, `/box/device/${encodeURIComponent(s)}`)));
  const boxwatchLists = async (): Promise<number> => (await cpuOf(() => Promise.all(times.map(() => client.listDevices({ signal: cycle.signal }))))) / lists;
  const floorLists = async (): Promise<number> => (await cpuOf(() => Promise.all(times.map(() => naiveGetJson(pool, KEY, '/box/device-list'))))) / lists;
  let b: number, f: number, bl: number, fl: number;
  if (round % 2 === 0) {
    b = await boxwatchDetails();
    f = await floorDetails();
    bl = await boxwatchLists();
    fl = await floorLists();
  } else {
    f = await floorDetails();
    b = await boxwatchDetails();
    fl = await floorLists();
    bl = await boxwatchLists();
  }
  if (round === 0) continue; // warm-up
  perRequest.boxwatch.push((b * 1000) / serials.length);
  perRequest.floor.push((f * 1000) / serials.length);
  perList.boxwatch.push(bl);
  perList.floor.push(fl);
  console.log(
    `round ${round}: details ${((b * 1000) / serials.length).toFixed(1)} / ${((f * 1000) / serials.length).toFixed(1)} µs per request; ` +
      `device list ${bl.toFixed(1)} / ${fl.toFixed(1)} ms (boxwatch / floor)`,
  );
}
await client.close();
await pool.close();
sim.stop();

const report = {
  date: new Date().toISOString(),
  machine: `${os.cpus()[0]?.model ?? 'unknown cpu'} x${os.cpus().length}, node ${process.version}`,
  loadAverage: os.loadavg(),
  settings: { boxes, details, lists, rounds, concurrency: CONCURRENCY },
  detailsUs: { boxwatch: mean(perRequest.boxwatch), floor: mean(perRequest.floor), ratio: mean(perRequest.boxwatch) / mean(perRequest.floor) },
  deviceListMs: { boxwatch: mean(perList.boxwatch), floor: mean(perList.floor), ratio: mean(perList.boxwatch) / mean(perList.floor) },
};
console.log(
  `\n${boxes} boxes, ${details} details and ${lists} device lists a round, ${rounds} rounds (load average ${report.loadAverage.map((l) => l.toFixed(1)).join(' ')}):\n` +
    `  device details: boxwatch ${report.detailsUs.boxwatch.toFixed(1)} µs CPU per request, floor ${report.detailsUs.floor.toFixed(1)} µs, ${report.detailsUs.ratio.toFixed(2)}x\n` +
    `  device list of ${boxes}: boxwatch ${report.deviceListMs.boxwatch.toFixed(1)} ms CPU, floor ${report.deviceListMs.floor.toFixed(1)} ms, ${report.deviceListMs.ratio.toFixed(2)}x`,
);
if (values.json !== undefined) writeFileSync(values.json, `${JSON.stringify(report, null, 2)}\n`);
process.exit(0);
