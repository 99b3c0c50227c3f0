/**
 * The simulator's model without HTTP: simulated time (real speed or accelerated), the fleet, the
 * call book, the scenario timeline, the account key (with rotation) and fault injection. The
 * HTTP server (server.ts) asks it what to answer; tests can drive it directly.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { systemClock, type Clock } from '../clock.js';
import { ConfigError, type ConfigIssue } from '../errors.js';
import { BOX_FROM } from '../gateway/messages.js';
import { E164 } from '../phone.js';
import type { Endpoint } from '../gateway/types.js';
import { CallBook, findActiveAgent, phoneNumber, type SimCall } from './calls.js';
import { Fleet, type SimBox } from './fleet.js';
import { Rng, deriveSeed } from './rng.js';
import type { BoxTarget, FaultSpec, Scenario, TimelineEvent } from './scenario.js';
import { CallTraffic, type TrafficOptions } from './traffic.js';
import { DEV_KEY } from './dev-key.js';

/** The key the simulator accepts when neither --key nor BOXWATCH_SECRET_KEY is given. */
export { DEV_KEY };

export const SIM_DEFAULTS = {
  devices: 50,
  seed: 1,
  speed: 1,
  recordingTtlMs: 3_600_000,
  historyCalls: 40,
} as const;

export interface SimulatorOptions {
  key?: string;
  devices?: number;
  seed?: number;
  /** Simulated seconds per real second. */
  speed?: number;
  scenario?: Scenario;
  /** Drives simulated time; defaults to the system clock. */
  clock?: Clock;
  /** Simulated time at the start (ms since the epoch); defaults to the clock's now. */
  start?: number;
  recordingTtlMs?: number;
  /** Earlier calls invented in the day before the start. */
  historyCalls?: number;
  /** Background call traffic (overrides the scenario's `calls:`). */
  calls?: TrafficOptions;
  /** What every box serial starts with (default `BX-`). */
  serialPrefix?: string;
}

/** What a fault does to one request. */
export type FaultEffect =
  | { kind: 'reset' }
  | { kind: 'hang' }
  | { kind: 'status'; status: number; retryAfterMs?: number }
  | { kind: 'malformed' }
  | { kind: 'schema' };

export interface FaultDecision {
  latencyMs: number;
  effect: FaultEffect | null;
}

export type MakeCallOutcome =
  | { ok: true; call: SimCall }
  | { ok: false; error: 'invalid_device_serial' | 'invalid_phone_number' | 'invalid_agent' };

interface ActiveFault {
  spec: FaultSpec;
  hits: number;
}

interface AcceptedKey {
  digest: Buffer;
  /** Simulated time after which the key stops working (Infinity for the current key). */
  until: number;
}

export class Simulator {
  readonly fleet: Fleet;
  readonly calls: CallBook;
  /** Simulated time at the start. */
  readonly start: number;
  readonly speed: number;
  readonly seed: number;
  private readonly clock: Clock;
  private readonly origin: number;
  private readonly events: TimelineEvent[];
  private nextEvent = 0;
  private keys: AcceptedKey[];
  private readonly faults: ActiveFault[] = [];
  private readonly faultRng: Rng;
  private readonly traffic: CallTraffic | null;
  private readonly trafficAgents: readonly number[];
  /** Per box serial: the failure probability a scenario imposes on its calls. */
  private readonly failRates = new Map<string, number>();
  /** Boxes whose calls a scenario makes stuck. */
  private readonly stuckBoxes = new Set<string>();

  constructor(options: SimulatorOptions = {}) {
    const scenario = options.scenario;
    this.clock = options.clock ?? systemClock;
    this.origin = this.clock.now();
    this.start = options.start ?? this.origin;
    this.speed = options.speed ?? scenario?.speed ?? SIM_DEFAULTS.speed;
    this.seed = options.seed ?? scenario?.seed ?? SIM_DEFAULTS.seed;
    const devices = options.devices ?? scenario?.devices ?? SIM_DEFAULTS.devices;
    this.fleet = new Fleet({ devices, seed: this.seed, start: this.start, ...(options.serialPrefix !== undefined && { serialPrefix: options.serialPrefix }) });
    this.calls = new CallBook({
      seed: this.seed,
      start: this.start,
      recordingTtlMs: options.recordingTtlMs ?? scenario?.recordingTtlMs ?? SIM_DEFAULTS.recordingTtlMs,
      history: {
        count: options.historyCalls ?? SIM_DEFAULTS.historyCalls,
        boxes: this.fleet.boxes.map((b) => ({ serial: b.serial, signal: b.signal })),
      },
    });
    this.keys = [{ digest: digest(options.key ?? DEV_KEY), until: Number.POSITIVE_INFINITY }];
    this.faultRng = new Rng(deriveSeed(this.seed, -2));
    this.events = scenario?.events ?? [];
    const traffic = options.calls ?? scenario?.calls;
    this.trafficAgents = traffic?.agents ?? [];
    this.traffic = traffic
      ? new CallTraffic({
          perBoxPerHour: traffic.perBoxPerHour,
          agents: traffic.agents,
          seed: this.seed,
          start: this.start,
          boxes: this.fleet.boxes.length,
          idle: new Set(traffic.idle.flatMap((p) => this.fleet.match(p)).map((b) => this.fleet.boxes.indexOf(b))),
        })
      : null;
    this.checkTargets();
    for (const spec of scenario?.faults ?? []) this.faults.push({ spec, hits: 0 });
  }

  /** Current simulated time (ms since the epoch). */
  now(): number {
    return this.start + Math.round((this.clock.now() - this.origin) * this.speed);
  }

  /**
   * Brings the fleet, the background calls and the timeline up to the current simulated time and
   * returns it. Calls and events are applied in time order (a call at an event's time first).
   */
  sync(): number {
    const t = this.now();
    while (this.nextEvent < this.events.length) {
      const event = this.events[this.nextEvent] as TimelineEvent;
      const at = this.start + event.at;
      if (at > t) break;
      this.nextEvent += 1;
      this.placeBackgroundCalls(at);
      this.fleet.advanceTo(at);
      this.applyEvent(event, at);
    }
    this.placeBackgroundCalls(t);
    this.fleet.advanceTo(t);
    return t;
  }

  /**
   * Places the background calls due up to `t`: each from its box as the model has it at the
   * call's time. A box that is disconnected or off the device list places no call then.
   */
  private placeBackgroundCalls(t: number): void {
    if (!this.traffic) return;
    for (let arrival = this.traffic.next(t); arrival; arrival = this.traffic.next(t)) {
      this.fleet.advanceTo(arrival.at);
      const box = this.fleet.boxes[arrival.box] as SimBox;
      const { rng } = arrival;
      const agentId = rng.pick(this.trafficAgents);
      const to = phoneNumber(rng);
      if (!box.listed || !box.connected) continue;
      this.calls.place({ serial: box.serial, signal: box.signal, to, agentId }, arrival.at, {
        rng,
        ...this.callEffects(box),
      });
    }
  }

  /** What the scenario does to calls from `box` now (failure rate, stuck). */
  private callEffects(box: SimBox): { failRate: number | null; stuck: boolean } {
    return { failRate: this.failRates.get(box.serial) ?? null, stuck: this.stuckBoxes.has(box.serial) };
  }

  /** True if `key` is the account key (or a rotated-out key still within its grace period). */
  acceptsKey(key: string | undefined, now: number): boolean {
    if (key === undefined || key === '') return false;
    const d = digest(key);
    return this.keys.some((k) => now < k.until && timingSafeEqual(k.digest, d));
  }

  /** Replaces the account key; the old one keeps working for `graceMs` of simulated time. */
  rotateKey(key: string, graceMs = 0, now = this.now()): void {
    this.keys = [
      { digest: digest(key), until: Number.POSITIVE_INFINITY },
      ...this.keys.map((k) => ({ ...k, until: Math.min(k.until, now + graceMs) })).filter((k) => k.until > now),
    ];
  }

  /** Adds a fault window (times relative to the start, in simulated ms); returns its remover. */
  inject(spec: FaultSpec): () => void {
    const fault: ActiveFault = { spec, hits: 0 };
    this.faults.push(fault);
    return () => {
      const i = this.faults.indexOf(fault);
      if (i >= 0) this.faults.splice(i, 1);
    };
  }

  /** Removes every fault window, scenario ones included. */
  clearFaults(): void {
    this.faults.length = 0;
  }

  /** Decides which faults hit one request to `endpoint` at simulated time `now`. */
  faultFor(endpoint: Endpoint, now: number): FaultDecision {
    const offset = now - this.start;
    const decision: FaultDecision = { latencyMs: 0, effect: null };
    for (const fault of this.faults) {
      const { spec } = fault;
      if (spec.from !== undefined && offset < spec.from) continue;
      if (spec.to !== undefined && offset >= spec.to) continue;
      if (spec.endpoints && !spec.endpoints.includes(endpoint)) continue;
      if (spec.count !== undefined && fault.hits >= spec.count) continue;
      if (spec.rate !== undefined && !(this.faultRng.next() < spec.rate)) continue;
      const effect = effectOf(spec);
      if (effect && decision.effect) continue; // one effect per request; latency still adds up
      fault.hits += 1;
      decision.latencyMs += spec.latencyMs ?? 0;
      if (effect) decision.effect = effect;
    }
    return decision;
  }

  /** Validates make-call fields as the vendor does and places the call. */
  makeCall(fields: { from?: string; to?: string; agentId?: string }, now: number): MakeCallOutcome {
    const serial = BOX_FROM.exec(fields.from?.trim() ?? '')?.[1];
    const box = serial === undefined ? undefined : this.fleet.getListed(serial);
    if (!box || !box.connected) return { ok: false, error: 'invalid_device_serial' };
    const to = fields.to?.trim() ?? '';
    if (!E164.test(to)) return { ok: false, error: 'invalid_phone_number' };
    const agentText = fields.agentId?.trim() ?? '';
    const agent = /^\d{1,9}$/.test(agentText) ? findActiveAgent(Number(agentText)) : undefined;
    if (!agent) return { ok: false, error: 'invalid_agent' };
    return { ok: true, call: this.calls.place({ serial: box.serial, signal: box.signal, to, agentId: agent.id }, now, this.callEffects(box)) };
  }

  /** The boxes an event target names. */
  resolveTarget(target: BoxTarget): SimBox[] {
    if ('location' in target) return this.fleet.boxes.filter((b) => b.location === target.location);
    const seen = new Set<SimBox>();
    for (const pattern of target.serials) for (const box of this.fleet.match(pattern)) seen.add(box);
    return [...seen];
  }

  private applyEvent(event: TimelineEvent, at: number): void {
    switch (event.type) {
      case 'rotate_key':
        this.rotateKey(event.key, event.graceMs, at);
        break;
      case 'box':
        this.fleet.apply(this.resolveTarget(event.target), event.action);
        break;
      case 'calls_fail':
        for (const box of this.resolveTarget(event.target)) {
          if (event.rate === null) this.failRates.delete(box.serial);
          else this.failRates.set(box.serial, event.rate);
        }
        break;
      case 'calls_stuck':
        for (const box of this.resolveTarget(event.target)) {
          if (event.on) this.stuckBoxes.add(box.serial);
          else this.stuckBoxes.delete(box.serial);
        }
        break;
      case 'recording_ttl':
        this.calls.recordingTtlMs = event.ttlMs;
        break;
    }
  }

  private checkTargets(): void {
    const issues: ConfigIssue[] = [];
    for (const event of this.events) {
      if (!('target' in event) || this.resolveTarget(event.target).length > 0) continue;
      const prefix = event.type === 'calls_fail' || event.type === 'calls_stuck' ? `${event.type}.` : '';
      const field = prefix + ('location' in event.target ? 'location' : 'box');
      const range = this.fleet.boxes.length === 0 ? 'the fleet is empty' : `serials are ${this.fleet.boxes[0]?.serial} to ${this.fleet.boxes.at(-1)?.serial}`;
      if (!issues.some((i) => i.path === `${event.path}.${field}`)) issues.push({ path: `${event.path}.${field}`, message: `matches no box (${range})` });
    }
    if (issues.length > 0) throw new ConfigError(issues, 'scenario');
  }
}

function effectOf(spec: FaultSpec): FaultEffect | null {
  if (spec.reset) return { kind: 'reset' };
  if (spec.hang) return { kind: 'hang' };
  if (spec.status !== undefined) {
    return spec.retryAfterMs === undefined ? { kind: 'status', status: spec.status } : { kind: 'status', status: spec.status, retryAfterMs: spec.retryAfterMs };
  }
  if (spec.malformedJson) return { kind: 'malformed' };
  if (spec.schemaViolation) return { kind: 'schema' };
  return null;
}

function digest(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}
