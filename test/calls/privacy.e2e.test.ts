/**
 * Numbers and transcripts stay out of the database, the logs and the notifications unless
 * enabled: the daemon reads the simulator's background calls over real HTTP (call list faults,
 * malformed answers and a failing box included, so that call code logs and alerts), with a
 * debug-level JSON logger, Slack and SMTP receivers; every byte they got is searched.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { startRig, type Rig } from '../e2e/harness.js';

const M = 60_000;
let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

async function run(calls: string): Promise<{ r: Rig; logs: string[] }> {
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(chunk.toString());
      done();
    },
  });
  const r = await startRig({
    devices: 5,
    seed: 9,
    logger: createLogger({ level: 'debug', destination }),
    yaml: `rules:
  - { name: call-failures, kind: call_failure_rate, window: 5, min_calls: 3, above: 50, severity: warning }
  - { name: call-stuck, kind: call_stuck, max_duration: 5m, severity: warning }
alerting: { group_wait: 0s }
calls: ${calls}
`,
    scenario: `calls: { per_box_per_hour: 40 }
timeline:
  - { at: 0s, box: "BX-*", connect: true }
  - { at: 10m, calls_fail: { box: BX-00002, rate: 1 } }
  - { at: 10m, calls_stuck: { box: BX-00004 } }
  - { from: 15m, to: 17m, endpoints: [call_list], malformed_json: true }
  - { from: 20m, to: 22m, endpoints: [call_details, call_list], schema_violation: true }
  - { from: 25m, to: 27m, status: 503 }
`,
    sim: { historyCalls: 0 },
  });
  rig = r;
  for (let i = 0; i < 40; i++) {
    r.clock.advance(M);
    await r.app.runCallsOnce();
    await r.app.runOnce();
    await r.app.deliverNow();
  }
  return { r, logs };
}

/** Every destination number and transcript the simulator produced. */
function secrets(r: Rig): { numbers: string[]; transcripts: string[] } {
  const items = r.sim.sim.calls.page(100_000, 1).items;
  return {
    numbers: [...new Set(items.map((c) => c.to.slice(1)))],
    // the simulator's transcripts are built from a few lines: each distinct line is looked for
    transcripts: [...new Set(items.flatMap((c) => (c.transcript ? c.transcript.split('\n') : [])))],
  };
}

async function databaseBytes(r: Rig): Promise<string> {
  await r.app.stop();
  const dir = dirname(r.dbPath);
  return readdirSync(dir)
    .map((f) => readFileSync(join(dir, f)).toString('latin1'))
    .join('\n');
}

function notifications(r: Rig): string {
  return [...r.slack.requests.map((q) => q.raw), ...r.smtp.messages.map((m) => `${m.subject}\n${m.text}\n${m.html}`), ...r.console].join('\n');
}

describe('call privacy', () => {
  it('by default: no number or transcript in the database, the logs or the notifications', async () => {
    const { r, logs } = await run('{ per_page: 20 }');
    const { numbers, transcripts } = secrets(r);
    expect(numbers.length).toBeGreaterThan(50);
    expect(transcripts.length).toBeGreaterThan(4);
    const told = notifications(r);
    expect(told).toMatch(/calls failed/); // the call alerts did go out
    expect(logs.join('').length).toBeGreaterThan(1000); // and the call code logged
    const db = await databaseBytes(r);
    for (const n of numbers) {
      expect(db.includes(n), n).toBe(false);
      expect(logs.join('').includes(n), n).toBe(false);
      expect(told.includes(n), n).toBe(false);
    }
    for (const t of transcripts) {
      expect(db.includes(t), t).toBe(false);
      expect(logs.join('').includes(t), t).toBe(false);
      expect(told.includes(t), t).toBe(false);
    }
  });

  it('enabled: stored in the database, and still never in the logs or the notifications', async () => {
    const { r, logs } = await run('{ per_page: 20, store_numbers: true, store_transcripts: true }');
    const { numbers, transcripts } = secrets(r);
    const told = notifications(r);
    expect(told).toMatch(/calls failed/);
    const db = await databaseBytes(r);
    expect(numbers.some((n) => db.includes(n))).toBe(true);
    expect(transcripts.some((t) => db.includes(t))).toBe(true);
    for (const n of numbers) {
      expect(logs.join('').includes(n), n).toBe(false);
      expect(told.includes(n), n).toBe(false);
    }
    for (const t of transcripts) {
      expect(logs.join('').includes(t), t).toBe(false);
      expect(told.includes(t), t).toBe(false);
    }
  });
});
