/**
 * Detection latency: from the moment the simulator flips a box to disconnected until a local Slack
 * receiver has the FIRING message for it. The daemon runs as a child process
 * (`node dist/src/main.js run`) with a 1 s schedule, a `disconnected` rule with `for: 0s`,
 * `group_wait: 0s` and the default details policy; the simulator (real clock, speed 1) and the
 * receiver (plain node:http) run in this process, so that a flip and an arrival are timestamped
 * on the same clock.
 *
 * Each flip waits a random 0-1 s first, so that flips land at every phase of the schedule, then
 * disconnects the next box and waits for its FIRING message; the box is then connected again at a
 * random moment within the next second while the next flip goes on (its RESOLVED message is timed
 * too, as a second figure). Target: p99 no
 * more than 1.5 s above the schedule interval, i.e. under 2.5 s.
 *
 *   npm run build && node dist/bench/detection.bench.js [--flips 100] [boxes...]   (default: 10 and 1000 boxes)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startSimulator } from '../src/sim/server.js';
import { quantile, sleep, startDaemon } from './daemon.js';

const KEY = 'bench-detection-key';
const SCHEDULE_MS = 1000;
const TARGET_MS = SCHEDULE_MS + 1500;
/** Colour of the resolved attachment in boxwatch's Slack payload; any other colour is a firing group. */
const RESOLVED_COLOUR = '#2eb67d';

interface Arrival {
  at: number;
  firing: string;
  resolved: string;
}

/** A Slack incoming-webhook stand-in that timestamps every message on arrival. */
async function startReceiver(): Promise<{ url: string; server: Server; arrivals: Arrival[] }> {
  const arrivals: Arrival[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { attachments?: { color: string; blocks: unknown }[] };
      const groups = body.attachments ?? [];
      arrivals.push({
        at,
        firing: JSON.stringify(groups.filter((g) => g.color !== RESOLVED_COLOUR)),
        resolved: JSON.stringify(groups.filter((g) => g.color === RESOLVED_COLOUR)),
      });
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/services/T000/B000/bench`, server, arrivals };
}

/** Resolves with the arrival time of the first message (from index `from`) that matches. */
async function arrival(arrivals: Arrival[], from: number, match: (a: Arrival) => boolean, timeoutMs = 15_000): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const found = arrivals.slice(from).find(match);
    if (found) return found.at;
    if (performance.now() > deadline) throw new Error('no message within 15 s');
    await sleep(2);
  }
}

async function bench(devices: number, flips: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'boxwatch-bench-detect-'));
  const sim = await startSimulator({ port: 0, key: KEY, devices, seed: 7, speed: 1 });
  const receiver = await startReceiver();
  const fleet = sim.sim.fleet;
  sim.sim.sync();
  fleet.apply(fleet.boxes, { kind: 'connect' }); // a clean start: every box up
  const configPath = join(dir, 'boxwatch.yaml');
  writeFileSync(
    configPath,
    `gateway: { base_url: "${sim.url}", secret_key: "\${BOXWATCH_SECRET_KEY}" }
poll: { schedule: "* * * * * *" }
storage: { path: "${join(dir, 'boxwatch.db')}" }
rules:
  - { name: box-offline, kind: disconnected, for: 0s, severity: critical }
alerting: { group_wait: 0s }
notifiers:
  - { name: slack, type: slack, webhook_url: "${receiver.url}" }
http: { listen: "127.0.0.1:0" }
log: { level: info, format: json }
`,
  );
  const daemon = await startDaemon(configPath, { BOXWATCH_SECRET_KEY: KEY });
  const firing: number[] = [];
  const resolving: Promise<number>[] = [];
  try {
    await sleep(2 * SCHEDULE_MS); // past the first cycles (details of every box)
    for (let i = 0; i < flips; i++) {
      const box = fleet.boxes[(i * 7) % fleet.boxes.length];
      if (!box) throw new Error('no box');
      await sleep(Math.random() * SCHEDULE_MS);
      const from = receiver.arrivals.length;
      sim.sim.sync();
      fleet.apply([box], { kind: 'disconnect' });
      const t0 = performance.now();
      const at = await arrival(receiver.arrivals, from, (a) => a.firing.includes(box.serial));
      firing.push(at - t0);
      // Back up again at a random moment while the next flip goes on; its RESOLVED message is timed too.
      resolving.push(
        sleep(Math.random() * SCHEDULE_MS).then(() => {
          const from2 = receiver.arrivals.length;
          sim.sim.sync();
          fleet.apply([box], { kind: 'connect' });
          const t1 = performance.now();
          return arrival(receiver.arrivals, from2, (a) => a.resolved.includes(box.serial)).then((t) => t - t1);
        }),
      );
    }
    const resolved = await Promise.all(resolving);
    const f = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
    const p99 = quantile(firing, 0.99);
    console.log(
      `${devices} boxes, ${flips} flips, 1 s schedule: disconnect -> Slack FIRING median ${f(quantile(firing, 0.5))}, p99 ${f(p99)}, max ${f(Math.max(...firing))}` +
        ` | reconnect -> RESOLVED median ${f(quantile(resolved, 0.5))}, p99 ${f(quantile(resolved, 0.99))}` +
        ` | target p99 <= ${f(TARGET_MS)}: ${p99 <= TARGET_MS ? 'met' : 'MISSED'}`,
    );
    if (daemon.problems.length > 0) console.log(`  daemon warnings: ${[...new Set(daemon.problems)].join('; ')}`);
  } finally {
    await daemon.stop();
    await sim.close();
    await new Promise<void>((resolve) => receiver.server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  }
}

const { values, positionals } = parseArgs({ options: { flips: { type: 'string', default: '100' } }, allowPositionals: true });
const flips = Number(values.flips);
const sizes = positionals.map(Number).filter((n) => n > 0);
for (const n of sizes.length > 0 ? sizes : [10, 1_000]) {
  await bench(n, flips);
}
