/**
 * The simulated call book: agents, calls placed through make-call, and a deterministic history
 * of earlier calls. A call is `initiated` until its simulated end, then `completed` (duration,
 * recording, transcript when the agent transcribes, variables) or `failed`; weak signal on the
 * box makes failure more likely. Status is computed from the simulated time of each read.
 */
import { Rng, deriveSeed } from './rng.js';
import type { Call, CallSummary } from '../gateway/schemas.js';

export interface Agent {
  id: number;
  name: string;
  active: boolean;
  transcription: boolean;
}

/** The account's agents. 105 exists but is inactive: make-call refuses it. */
export const AGENTS: readonly Agent[] = [
  { id: 101, name: 'Appointment reminder', active: true, transcription: true },
  { id: 102, name: 'Payment follow-up', active: true, transcription: false },
  { id: 103, name: 'Satisfaction survey', active: true, transcription: true },
  { id: 104, name: 'Delivery notice', active: true, transcription: false },
  { id: 105, name: 'Retired campaign', active: false, transcription: false },
];

export function findActiveAgent(id: number): Agent | undefined {
  return AGENTS.find((a) => a.id === id && a.active);
}

export interface SimCall {
  id: number;
  agentId: number;
  from: string;
  to: string;
  startedAt: number;
  endedAt: number;
  outcome: 'completed' | 'failed';
  durationSec: number;
  /** Token of the recording URL (completed calls only). */
  recordingToken: string | null;
  transcript: string | null;
  variables: Record<string, string> | null;
}

export interface CallBookOptions {
  seed: number;
  start: number;
  /** How long a recording stays downloadable after the call ends (simulated ms). */
  recordingTtlMs: number;
  /** Earlier calls to invent, spread over the day before `start`. */
  history: { count: number; boxes: readonly { serial: string; signal: number }[] };
}

const FIRST_CALL_ID = 100_001;
const OUTCOMES = ['confirmed', 'rescheduled', 'no_answer_machine', 'callback_requested', 'declined'];

/** Probability that a call fails, by the box's signal strength in dBm. */
export function failureProbability(signalDbm: number): number {
  if (signalDbm <= -110) return 0.7;
  if (signalDbm <= -100) return 0.35;
  if (signalDbm <= -90) return 0.12;
  return 0.05;
}

export class CallBook {
  private readonly calls: SimCall[] = [];
  private readonly byId = new Map<number, SimCall>();
  private readonly byToken = new Map<string, SimCall>();
  private readonly rng: Rng;
  private nextId = FIRST_CALL_ID;
  /** How long a recording stays downloadable after its call ends; a scenario may change it. */
  recordingTtlMs: number;

  constructor(options: CallBookOptions) {
    this.rng = new Rng(deriveSeed(options.seed, -1));
    this.recordingTtlMs = options.recordingTtlMs;
    const { count, boxes } = options.history;
    if (boxes.length === 0) return;
    const times = Array.from({ length: count }, () => options.start - this.rng.int(5 * 60_000, 24 * 3_600_000)).sort((a, b) => a - b);
    for (const t of times) {
      const box = this.rng.pick(boxes);
      const agent = this.rng.pick(AGENTS.filter((a) => a.active));
      this.place({ serial: box.serial, signal: box.signal, to: this.phoneNumber(), agentId: agent.id }, t);
    }
  }

  /**
   * Places a call at simulated time `now`; the caller has validated box, number and agent.
   * `rng` is the random stream to draw from (background traffic passes the box's own);
   * `failRate` replaces the signal-based failure probability; a `stuck` call never ends.
   */
  place(
    input: { serial: string; signal: number; to: string; agentId: number },
    now: number,
    options: { rng?: Rng; failRate?: number | null; stuck?: boolean } = {},
  ): SimCall {
    const rng = options.rng ?? this.rng;
    const failed = rng.chance(options.failRate ?? failureProbability(input.signal));
    const ringMs = rng.int(4_000, 25_000);
    const durationSec = failed ? 0 : rng.int(15, 240);
    const agent = AGENTS.find((a) => a.id === input.agentId);
    const stuck = options.stuck === true;
    const call: SimCall = {
      id: this.nextId++,
      agentId: input.agentId,
      from: `box:${input.serial}`,
      to: input.to,
      startedAt: now,
      // A stuck call stays `initiated` for ever: it never reaches its end.
      endedAt: stuck ? Number.POSITIVE_INFINITY : now + ringMs + durationSec * 1000,
      outcome: failed ? 'failed' : 'completed',
      durationSec,
      recordingToken: failed ? null : rng.hex(24),
      transcript: !failed && agent?.transcription ? transcriptFor(agent, rng) : null,
      variables: failed ? null : { customer_ref: `C-${rng.int(10_000, 99_999)}`, outcome: rng.pick(OUTCOMES), language: rng.pick(['en', 'fr', 'de', 'pt']) },
    };
    this.calls.push(call);
    this.byId.set(call.id, call);
    if (call.recordingToken) this.byToken.set(call.recordingToken, call);
    return call;
  }

  get(id: number): SimCall | undefined {
    return this.byId.get(id);
  }

  get size(): number {
    return this.calls.length;
  }

  /** One page of the list, newest first. `page` is 1-based. */
  page(perPage: number, page: number): { items: SimCall[]; hasNext: boolean } {
    const end = this.calls.length - (page - 1) * perPage;
    const begin = Math.max(0, end - perPage);
    const items = end > 0 ? this.calls.slice(begin, end).reverse() : [];
    return { items, hasNext: begin > 0 };
  }

  /** True while the recording behind `token` may be downloaded at simulated time `now`. */
  recordingAvailable(call: SimCall, now: number): boolean {
    return call.recordingToken !== null && now >= call.endedAt && now < call.endedAt + this.recordingTtlMs;
  }

  byRecordingToken(token: string): SimCall | undefined {
    return this.byToken.get(token);
  }

  /** The call summary as the list endpoint shows it at `now`. */
  summaryAt(call: SimCall, now: number): CallSummary {
    const done = now >= call.endedAt;
    const summary: CallSummary = {
      call_id: String(call.id),
      status: done ? call.outcome : 'initiated',
      from: call.from,
      to: call.to,
      agent_id: call.agentId,
      direction: 'outbound',
      started_at: iso(call.startedAt),
    };
    if (done) {
      summary.ended_at = iso(call.endedAt);
      summary.duration_sec = call.durationSec;
    }
    return summary;
  }

  /** The full call record at `now`; `recordingBase` is the simulator's public address. */
  detailsAt(call: SimCall, now: number, recordingBase: string): Call {
    const summary = this.summaryAt(call, now);
    const full: Call = { ...summary };
    if (now < call.endedAt || call.outcome === 'failed') return full;
    if (this.recordingAvailable(call, now)) full.audio_record_url = `${recordingBase}/recordings/${call.recordingToken}.wav`;
    if (call.transcript !== null) full.transcript = call.transcript;
    if (call.variables !== null) full.variables = { ...call.variables };
    return full;
  }

  private phoneNumber(): string {
    return phoneNumber(this.rng);
  }
}

/** A plausible E.164 destination drawn from `rng`. */
export function phoneNumber(rng: Rng): string {
  return `+${rng.pick(['33', '44', '49', '351', '31'])}${rng.int(100_000_000, 999_999_999)}`;
}

function transcriptFor(agent: Agent, rng: Rng): string {
  const lines = [
    `Agent: Hello, this is the ${agent.name.toLowerCase()} assistant calling on behalf of your provider.`,
    rng.pick(['Customer: Yes, speaking.', 'Customer: Hello? Who is this?', 'Customer: Hi, go ahead.']),
    'Agent: I am calling about your recent request. Is now a good time?',
    rng.pick(['Customer: Sure, that works.', 'Customer: Could you call back tomorrow?', 'Customer: No, thank you.']),
    'Agent: Thank you for your time. Goodbye.',
  ];
  return lines.join('\n');
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** A short, valid WAV file (one second of 8 kHz mono silence) served for every recording. */
export const SILENT_WAV: Buffer = (() => {
  const samples = 8000;
  const buf = Buffer.alloc(44 + samples * 2);
  buf.write('RIFF', 0, 'ascii');
  buf.writeUInt32LE(36 + samples * 2, 4);
  buf.write('WAVEfmt ', 8, 'ascii');
  buf.writeUInt32LE(16, 16);
  buf.writeUInt16LE(1, 20);
  buf.writeUInt16LE(1, 22);
  buf.writeUInt32LE(8000, 24);
  buf.writeUInt32LE(16000, 28);
  buf.writeUInt16LE(2, 32);
  buf.writeUInt16LE(16, 34);
  buf.write('data', 36, 'ascii');
  buf.writeUInt32LE(samples * 2, 40);
  return buf;
})();
