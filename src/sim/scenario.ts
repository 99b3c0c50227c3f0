/**
 * Scenario files for the simulator: a YAML timeline of box events (disconnect, battery, signal,
 * staleness, firmware), call events (failure rate, stuck calls, recording retention), key
 * rotations, and fault windows (latency, error status, 429 with Retry-After, malformed JSON,
 * schema violations, connection resets, hangs), plus background call traffic (`calls:`). Times
 * are offsets from the simulator's start in simulated time (`30s`, `2m`, `1h30m`). See
 * docs/simulator.md.
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { ConfigError, type ConfigIssue } from '../errors.js';
import { tryParseDuration } from '../duration.js';
import { globProblem } from '../glob.js';
import type { Endpoint } from '../gateway/types.js';
import type { BoxAction } from './fleet.js';
import type { TrafficOptions } from './traffic.js';
import { readYaml } from '../yaml.js';

export const ENDPOINTS: readonly Endpoint[] = ['make_call', 'call_details', 'call_list', 'device_list', 'device_details'];

/** Which boxes an event touches: serials (each may contain `*`), or every box at a location. */
export type BoxTarget = { serials: string[] } | { location: string };

export type TimelineEvent = { at: number; path: string } & (
  | { type: 'box'; target: BoxTarget; action: BoxAction }
  | { type: 'rotate_key'; key: string; graceMs: number }
  /** From now on the boxes' calls fail with this probability; null: back to the signal model. */
  | { type: 'calls_fail'; target: BoxTarget; rate: number | null }
  /** From now on the boxes' calls stay `initiated` for ever (or no longer, with on: false). */
  | { type: 'calls_stuck'; target: BoxTarget; on: boolean }
  /** Recordings now stay downloadable this long after their call ends. */
  | { type: 'recording_ttl'; ttlMs: number }
);

/** A fault window. Times are simulated ms from the start; absent means open-ended. */
export interface FaultSpec {
  from?: number;
  to?: number;
  /** Endpoints it applies to; all when absent. */
  endpoints?: readonly Endpoint[];
  /** Probability that a matching request is hit (default 1). */
  rate?: number;
  /** Hit at most this many requests, then stop. */
  count?: number;
  /** Real milliseconds added before answering. */
  latencyMs?: number;
  /** Answer with this HTTP status and an error envelope. */
  status?: number;
  /** With status 429 or 503: the Retry-After header, in seconds (rounded up). */
  retryAfterMs?: number;
  /** Send a truncated JSON body instead of the real answer. */
  malformedJson?: boolean;
  /** Send a well-formed body that breaks the documented schema. */
  schemaViolation?: boolean;
  /** Destroy the connection without an answer. */
  reset?: boolean;
  /** Never answer (until the client gives up or the simulator closes). */
  hang?: boolean;
}

export interface Scenario {
  devices?: number;
  seed?: number;
  speed?: number;
  recordingTtlMs?: number;
  /** Background call traffic; absent: calls only through make-call. */
  calls?: TrafficOptions;
  events: TimelineEvent[];
  faults: FaultSpec[];
}

const duration = z.union([z.string(), z.literal(0)]).transform((value, ctx) => {
  const ms = typeof value === 'number' ? 0 : tryParseDuration(value);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: 'expected a duration such as 30s, 5m or 1h30m' });
    return z.NEVER;
  }
  return ms;
});

/** A serial or a serial glob (src/glob.ts), refused when not well formed. */
const serialGlob = z
  .string()
  .min(1)
  .superRefine((glob, ctx) => {
    const problem = globProblem(glob);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });
const boxList = z.union([serialGlob, z.array(serialGlob).min(1)]);

const callsFailSchema = z.strictObject({
  box: boxList.optional(),
  location: z.string().min(1).optional(),
  rate: z.number().min(0).max(1),
  for: duration.optional(),
});

const callsStuckSchema = z.strictObject({
  box: boxList.optional(),
  location: z.string().min(1).optional(),
  on: z.boolean().default(true),
  for: duration.optional(),
});

const trafficSchema = z.strictObject({
  per_box_per_hour: z.number().min(0).max(3600),
  agents: z.array(z.number().int().positive()).min(1).default([101, 102, 103, 104]),
  idle: boxList.optional(),
});

const entrySchema = z.strictObject({
  at: duration.optional(),
  from: duration.optional(),
  to: duration.optional(),
  for: duration.optional(),
  // box events
  box: boxList.optional(),
  location: z.string().min(1).optional(),
  disconnect: z.literal(true).optional(),
  connect: z.literal(true).optional(),
  battery: z.number().int().min(0).max(100).optional(),
  signal: z.number().int().min(-140).max(0).optional(),
  stale: z.boolean().optional(),
  firmware: z.string().min(1).optional(),
  listed: z.boolean().optional(),
  // call events
  calls_fail: callsFailSchema.optional(),
  calls_stuck: callsStuckSchema.optional(),
  recording_ttl: duration.optional(),
  // key rotation
  rotate_key: z.string().min(1).optional(),
  grace: duration.optional(),
  // faults
  endpoints: z.array(z.enum(ENDPOINTS as [Endpoint, ...Endpoint[]])).min(1).optional(),
  rate: z.number().min(0).max(1).optional(),
  count: z.number().int().min(1).optional(),
  latency: duration.optional(),
  status: z.number().int().min(400).max(599).optional(),
  retry_after: duration.optional(),
  malformed_json: z.literal(true).optional(),
  schema_violation: z.literal(true).optional(),
  reset: z.literal(true).optional(),
  hang: z.literal(true).optional(),
});
type Entry = z.infer<typeof entrySchema>;

const scenarioSchema = z.strictObject({
  devices: z.number().int().min(0).max(100_000).optional(),
  seed: z.number().int().optional(),
  speed: z.number().positive().max(100_000).optional(),
  recording_ttl: duration.optional(),
  calls: trafficSchema.optional(),
  timeline: z.array(entrySchema).default([]),
});

const BOX_KEYS = ['disconnect', 'connect', 'battery', 'signal', 'stale', 'firmware', 'listed'] as const;
const FAULT_KEYS = ['latency', 'status', 'malformed_json', 'schema_violation', 'reset', 'hang'] as const;
const FAULT_ONLY = [...FAULT_KEYS, 'endpoints', 'rate', 'count', 'retry_after', 'from', 'to'] as const;

/** Parses scenario YAML text; throws ConfigError naming the path of every problem. */
export function parseScenario(text: string, source = 'scenario'): Scenario {
  const raw = readYaml(text, source);
  const parsed = scenarioSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((i) => ({ path: formatPath(i.path) || '(root)', message: i.message })),
      source,
    );
  }
  const issues: ConfigIssue[] = [];
  const events: TimelineEvent[] = [];
  const faults: FaultSpec[] = [];
  parsed.data.timeline.forEach((entry, index) => {
    const path = `timeline[${index}]`;
    const problem = (field: string, message: string): void => {
      issues.push({ path: field ? `${path}.${field}` : path, message });
    };
    const has = (keys: readonly (keyof Entry)[]): (keyof Entry)[] => keys.filter((k) => entry[k] !== undefined);
    const isBox = entry.box !== undefined || entry.location !== undefined;
    const callEvent = has(['calls_fail', 'calls_stuck', 'recording_ttl']);
    if (callEvent.length > 0) {
      callEvents(entry, path, problem, events);
    } else if (entry.rotate_key !== undefined) {
      const extra = has([...BOX_KEYS, ...FAULT_ONLY, 'box', 'location', 'for']);
      if (extra.length > 0) problem(extra[0] as string, 'not allowed with rotate_key');
      if (entry.at === undefined) problem('at', 'rotate_key needs `at`');
      else events.push({ at: entry.at, path, type: 'rotate_key', key: entry.rotate_key, graceMs: entry.grace ?? 0 });
    } else if (isBox) {
      boxEvents(entry, path, problem, events);
    } else {
      const fault = faultWindow(entry, problem);
      if (fault) faults.push(fault);
    }
  });
  if (issues.length > 0) throw new ConfigError(issues, source);
  events.sort((a, b) => a.at - b.at); // stable: same time keeps file order
  const d = parsed.data;
  return {
    ...(d.devices !== undefined && { devices: d.devices }),
    ...(d.seed !== undefined && { seed: d.seed }),
    ...(d.speed !== undefined && { speed: d.speed }),
    ...(d.recording_ttl !== undefined && { recordingTtlMs: d.recording_ttl }),
    ...(d.calls !== undefined && { calls: { perBoxPerHour: d.calls.per_box_per_hour, agents: d.calls.agents, idle: [d.calls.idle ?? []].flat() } }),
    events,
    faults,
  };
}

/** Reads and parses a scenario file. */
export async function loadScenario(file: string): Promise<Scenario> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError([{ path: '(file)', message: code === 'ENOENT' ? 'file not found' : `cannot be read (${code ?? 'error'})` }], `scenario ${file}`);
  }
  return parseScenario(text, `scenario ${file}`);
}

function boxEvents(entry: Entry, path: string, problem: (field: string, message: string) => void, out: TimelineEvent[]): void {
  if (entry.box !== undefined && entry.location !== undefined) problem('location', 'use either box or location, not both');
  const stray = [...FAULT_ONLY, 'grace'].filter((k) => entry[k as keyof Entry] !== undefined);
  if (stray.length > 0) problem(stray[0] as string, 'not allowed in a box event');
  if (entry.at === undefined) {
    problem('at', 'a box event needs `at`');
    return;
  }
  const target: BoxTarget = entry.location !== undefined ? { location: entry.location } : { serials: [entry.box ?? []].flat() };
  const actions: BoxAction[] = [];
  if (entry.disconnect) actions.push({ kind: 'disconnect' });
  if (entry.connect) actions.push({ kind: 'connect' });
  if (entry.battery !== undefined) actions.push({ kind: 'battery', level: entry.battery });
  if (entry.signal !== undefined) actions.push({ kind: 'signal', dbm: entry.signal });
  if (entry.stale !== undefined) actions.push({ kind: 'stale', on: entry.stale });
  if (entry.firmware !== undefined) actions.push({ kind: 'firmware', version: entry.firmware });
  if (entry.listed !== undefined) actions.push({ kind: 'listed', on: entry.listed });
  if (actions.length === 0) problem('', `a box event needs one of: ${BOX_KEYS.join(', ')}`);
  if (entry.disconnect && entry.connect) problem('connect', 'cannot both connect and disconnect');
  for (const action of actions) out.push({ at: entry.at, path, type: 'box', target, action });
  if (entry.for !== undefined) {
    if (entry.disconnect) out.push({ at: entry.at + entry.for, path, type: 'box', target, action: { kind: 'connect' } });
    else if (entry.stale === true) out.push({ at: entry.at + entry.for, path, type: 'box', target, action: { kind: 'stale', on: false } });
    else if (entry.listed === false) out.push({ at: entry.at + entry.for, path, type: 'box', target, action: { kind: 'listed', on: true } });
    else problem('for', '`for` applies to disconnect, stale: true and listed: false only');
  }
}

function callEvents(entry: Entry, path: string, problem: (field: string, message: string) => void, out: TimelineEvent[]): void {
  const keys = (['calls_fail', 'calls_stuck', 'recording_ttl'] as const).filter((k) => entry[k] !== undefined);
  const stray = (Object.keys(entry) as (keyof Entry)[]).filter((k) => k !== 'at' && !(keys as readonly string[]).includes(k));
  if (keys.length > 1) problem(keys[1] as string, `one call event per entry (${keys[0]} is already here)`);
  if (stray.length > 0) problem(stray[0] as string, `not allowed with ${keys[0]}`);
  if (entry.at === undefined) {
    problem('at', 'a call event needs `at`');
    return;
  }
  const at = entry.at;
  const targetOf = (e: { box?: string | string[] | undefined; location?: string | undefined }, key: string): BoxTarget | undefined => {
    if (e.box !== undefined && e.location !== undefined) problem(`${key}.location`, 'use either box or location, not both');
    if (e.location !== undefined) return { location: e.location };
    if (e.box !== undefined) return { serials: [e.box].flat() };
    problem(`${key}.box`, 'names the boxes (a serial, a glob, or a list) or use location');
    return undefined;
  };
  if (entry.calls_fail !== undefined) {
    const target = targetOf(entry.calls_fail, 'calls_fail');
    if (!target) return;
    out.push({ at, path, type: 'calls_fail', target, rate: entry.calls_fail.rate });
    if (entry.calls_fail.for !== undefined) out.push({ at: at + entry.calls_fail.for, path, type: 'calls_fail', target, rate: null });
  } else if (entry.calls_stuck !== undefined) {
    const target = targetOf(entry.calls_stuck, 'calls_stuck');
    if (!target) return;
    const { on } = entry.calls_stuck;
    out.push({ at, path, type: 'calls_stuck', target, on });
    if (entry.calls_stuck.for !== undefined) out.push({ at: at + entry.calls_stuck.for, path, type: 'calls_stuck', target, on: !on });
  } else if (entry.recording_ttl !== undefined) {
    out.push({ at, path, type: 'recording_ttl', ttlMs: entry.recording_ttl });
  }
}

function faultWindow(entry: Entry, problem: (field: string, message: string) => void): FaultSpec | undefined {
  const stray = [...BOX_KEYS, 'grace'].filter((k) => entry[k as keyof Entry] !== undefined);
  if (stray.length > 0) problem(stray[0] as string, 'needs box or location');
  if (FAULT_KEYS.every((k) => entry[k] === undefined)) {
    problem('', `an entry needs box/location, rotate_key, or a fault (${FAULT_KEYS.join(', ')})`);
    return undefined;
  }
  if (entry.at !== undefined && entry.from !== undefined) problem('at', 'use either at or from');
  if (entry.for !== undefined && entry.to !== undefined) problem('for', 'use either for or to');
  if (entry.retry_after !== undefined && entry.status !== 429 && entry.status !== 503) problem('retry_after', 'applies to status 429 or 503');
  const from = entry.from ?? entry.at;
  const to = entry.to ?? (entry.for !== undefined ? (from ?? 0) + entry.for : undefined);
  if (to !== undefined && to <= (from ?? 0)) problem('to', 'must be after from');
  return {
    ...(from !== undefined && { from }),
    ...(to !== undefined && { to }),
    ...(entry.endpoints && { endpoints: entry.endpoints }),
    ...(entry.rate !== undefined && { rate: entry.rate }),
    ...(entry.count !== undefined && { count: entry.count }),
    ...(entry.latency !== undefined && { latencyMs: entry.latency }),
    ...(entry.status !== undefined && { status: entry.status }),
    ...(entry.retry_after !== undefined && { retryAfterMs: entry.retry_after }),
    ...(entry.malformed_json && { malformedJson: true }),
    ...(entry.schema_violation && { schemaViolation: true }),
    ...(entry.reset && { reset: true }),
    ...(entry.hang && { hang: true }),
  };
}

function formatPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((acc, key) => (typeof key === 'number' ? `${acc}[${key}]` : acc ? `${acc}.${String(key)}` : String(key)), '');
}
