/**
 * Background call traffic: the calls a customer's own system places through every box, at a
 * configured rate (scenario `calls: { per_box_per_hour, agents, idle }`). Each box has its own
 * random stream and Poisson arrivals; arrivals are handed out in time order (a small heap), so the
 * same seed and start give the same calls whatever the pattern of requests. What happens to a
 * call (failure rate, stuck) is decided by the caller (Simulator) from the box and the scenario.
 */
import { Rng, deriveSeed } from './rng.js';

export interface TrafficOptions {
  /** Mean calls per box and hour of simulated time (0: none). */
  perBoxPerHour: number;
  /** Agent ids the traffic uses (each call picks one at random). */
  agents: readonly number[];
  /** Serial patterns (`*` any text) of boxes that place no calls at all. */
  idle: readonly string[];
}

export interface CallTrafficInit {
  perBoxPerHour: number;
  agents: readonly number[];
  seed: number;
  start: number;
  /** Number of boxes in the fleet. */
  boxes: number;
  /** Indices of the boxes that place no calls. */
  idle: ReadonlySet<number>;
}

/** Offset of the traffic's random streams from the fleet's (stream i+1 is box i's model). */
const STREAM_BASE = 1_000_000;
const HOUR = 3_600_000;

export interface Arrival {
  /** Index of the box in the fleet. */
  box: number;
  at: number;
  /** The box's own call stream: draw the call's details from it. */
  rng: Rng;
}

export class CallTraffic {
  private readonly rngs: Rng[];
  private readonly heap: { at: number; box: number }[] = [];
  private readonly meanGapMs: number;

  constructor(options: CallTrafficInit) {
    this.meanGapMs = options.perBoxPerHour > 0 ? HOUR / options.perBoxPerHour : Number.POSITIVE_INFINITY;
    this.rngs = Array.from({ length: options.boxes }, (_, i) => new Rng(deriveSeed(options.seed, STREAM_BASE + i)));
    if (!Number.isFinite(this.meanGapMs) || options.agents.length === 0) return;
    for (let i = 0; i < options.boxes; i++) if (!options.idle.has(i)) this.push({ at: options.start + this.gap(i), box: i });
  }

  /** Removes and returns the next arrival at or before `t` (and schedules that box's next one). */
  next(t: number): Arrival | undefined {
    const top = this.heap[0];
    if (top === undefined || top.at > t) return undefined;
    this.pop();
    const rng = this.rngs[top.box] as Rng;
    const arrival: Arrival = { box: top.box, at: top.at, rng };
    this.push({ at: top.at + this.gap(top.box), box: top.box });
    return arrival;
  }

  /** The time of the next arrival (Infinity when there is none). */
  peek(): number {
    return this.heap[0]?.at ?? Number.POSITIVE_INFINITY;
  }

  /** Milliseconds to the box's next call: exponential, at least one second. */
  private gap(box: number): number {
    return Math.max(1000, Math.round((this.rngs[box] as Rng).exponential(this.meanGapMs)));
  }

  private push(item: { at: number; box: number }): void {
    const h = this.heap;
    h.push(item);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(h[i] as typeof item, h[parent] as typeof item)) break;
      [h[i], h[parent]] = [h[parent] as typeof item, h[i] as typeof item];
      i = parent;
    }
  }

  private pop(): void {
    const h = this.heap;
    const last = h.pop();
    if (last === undefined || h.length === 0) return;
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && before(h[l] as typeof last, h[m] as typeof last)) m = l;
      if (r < h.length && before(h[r] as typeof last, h[m] as typeof last)) m = r;
      if (m === i) return;
      [h[i], h[m]] = [h[m] as typeof last, h[i] as typeof last];
      i = m;
    }
  }
}

/** Earlier first; equal times by box index, so the order never depends on the heap's history. */
function before(a: { at: number; box: number }, b: { at: number; box: number }): boolean {
  return a.at < b.at || (a.at === b.at && a.box < b.box);
}

