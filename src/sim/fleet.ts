/**
 * The simulated fleet: N boxes whose battery, signal, connection and activity evolve over
 * simulated time. Everything is derived from the seed: the same seed and start time give the same
 * fleet and the same history, whatever the pattern of requests, because the model moves in fixed
 * ticks of simulated time and each box draws from its own random stream.
 */
import { Rng, deriveSeed } from './rng.js';
import { isGlob, matchesGlob } from '../glob.js';
import type { Device, DeviceSummary } from '../gateway/schemas.js';

/** Simulated time between two steps of the model. */
export const TICK_MS = 10_000;

export const MAJORITY_FIRMWARE = '3.4.2';
/** Older versions that a few boxes still run, with their share of the fleet. */
const LAGGING_FIRMWARE: readonly (readonly [string, number])[] = [
  ['3.4.1', 0.05],
  ['3.3.0', 0.04],
  ['3.1.7', 0.02],
];

const CITIES = ['Lyon', 'Porto', 'Leeds', 'Gdansk', 'Utrecht', 'Bilbao', 'Graz', 'Turku', 'Brno', 'Cork', 'Ghent', 'Bari'];
const SITES = ['Head office', 'Warehouse B', 'Call centre', 'R&D lab', 'Depot', "St Mary's clinic", 'Branch 2', 'Store 14'];
const ROOMS = ['Front desk', 'Reception', 'Dispatch', 'Sales floor', 'Back office', 'Loading dock', 'Server room', 'Help desk'];

const HOUR = 3_600_000;
const MINUTE = 60_000;
const DAY = 24 * HOUR;

/** Per-tick probabilities derived from mean times between events. */
const P_DISCONNECT = TICK_MS / (2 * DAY);
const P_STALE = TICK_MS / (3 * DAY);
const P_POWER_CUT = TICK_MS / (2 * DAY);
const P_POWER_BACK = TICK_MS / (6 * HOUR);

const SIGNAL_MIN = -125;
const SIGNAL_MAX = -45;

/** The full, mutable state of one simulated box. Hidden fields drive the model. */
export interface SimBox {
  readonly id: number;
  readonly serial: string;
  name: string;
  readonly location: string;
  readonly ip: string;
  firmware: string;
  readonly registeredAt: number;
  connected: boolean;
  /** Battery charge in percent (hidden while disconnected, when the API reports null). */
  charge: number;
  onMains: boolean;
  /** Percent per tick. */
  readonly drainRate: number;
  readonly chargeRate: number;
  /** dBm, wandering around signalBase. */
  signal: number;
  signalBase: number;
  lastSeen: number;
  /** While set, last_seen does not advance although the box says connected. Infinity: held by a scenario. */
  staleUntil: number | null;
  /** When a disconnected box comes back. Infinity: held by a scenario; null: when its battery recovers. */
  reconnectAt: number | null;
  /** False while the box is gone from the account's device list (its details answer "not found"). */
  listed: boolean;
  readonly rng: Rng;
}

/** What a scenario or a test can do to boxes. */
export type BoxAction =
  | { kind: 'disconnect' }
  | { kind: 'connect' }
  | { kind: 'battery'; level: number }
  | { kind: 'signal'; dbm: number }
  | { kind: 'stale'; on: boolean }
  | { kind: 'firmware'; version: string }
  /** Takes the box off the device list (deregistered, or the vendor lost it), or puts it back. */
  | { kind: 'listed'; on: boolean };

export interface FleetOptions {
  devices: number;
  seed: number;
  /** Simulated time at which the fleet starts (ms since the epoch). */
  start: number;
  /** What every serial starts with (default `BX-`): `BX-00001`, `BX-00002`, ... */
  serialPrefix?: string;
}

/** A fleet of simulated boxes, moved forward in fixed ticks by `advanceTo`. */
export class Fleet {
  readonly boxes: SimBox[];
  private readonly bySerial = new Map<string, SimBox>();
  private nextTick: number;
  private time: number;
  /** Bumped on every change; lets the server reuse the serialized device list. */
  private versionCounter = 0;
  private listCache: { version: number; body: string } | null = null;
  /**
   * How far the gateway's clock is off (ms, positive = ahead): added to every time the API reports
   * (last_seen, registered_at, the Date header), as a gateway with a skewed clock would.
   */
  private skew = 0;

  get skewMs(): number {
    return this.skew;
  }

  set skewMs(ms: number) {
    this.skew = ms;
    this.versionCounter += 1;
  }

  constructor(options: FleetOptions) {
    this.boxes = createBoxes(options);
    for (const box of this.boxes) this.bySerial.set(box.serial, box);
    this.time = options.start;
    this.nextTick = options.start + TICK_MS;
  }

  /** The simulated time the fleet has reached. */
  get now(): number {
    return this.time;
  }

  get version(): number {
    return this.versionCounter;
  }

  get(serial: string): SimBox | undefined {
    return this.bySerial.get(serial);
  }

  /** A box the account's API shows: in the fleet and on the device list. */
  getListed(serial: string): SimBox | undefined {
    const box = this.bySerial.get(serial);
    return box?.listed ? box : undefined;
  }

  /** Boxes on the device list. */
  listed(): SimBox[] {
    return this.boxes.filter((b) => b.listed);
  }

  /** Serials matching a serial or a serial glob (src/glob.ts). */
  match(pattern: string): SimBox[] {
    if (!isGlob(pattern)) {
      const box = this.bySerial.get(pattern);
      return box ? [box] : [];
    }
    return this.boxes.filter((b) => matchesGlob(b.serial, pattern));
  }

  /** Steps the model through every tick up to `t` (simulated ms). Never moves backwards. */
  advanceTo(t: number): void {
    if (t <= this.time) return;
    while (this.nextTick <= t) {
      for (const box of this.boxes) stepBox(box, this.nextTick);
      this.time = this.nextTick;
      this.nextTick += TICK_MS;
      this.versionCounter += 1;
    }
    this.time = t;
  }

  /** Applies an action at the fleet's current time. */
  apply(boxes: readonly SimBox[], action: BoxAction): void {
    for (const box of boxes) applyAction(box, action, this.time);
    this.versionCounter += 1;
  }

  summary(box: SimBox): DeviceSummary {
    return {
      id: box.id,
      serial_no: box.serial,
      device_name: box.name,
      connected: box.connected,
      battery_level: box.connected ? Math.round(box.charge) : null,
      last_seen: new Date(box.lastSeen + this.skew).toISOString(),
      firmware_version: box.firmware,
    };
  }

  details(box: SimBox): Device {
    return {
      ...this.summary(box),
      signal_strength: Math.round(box.signal),
      registered_at: new Date(box.registeredAt + this.skew).toISOString(),
      location: box.location,
      ip_address: box.ip,
    };
  }

  summaries(): DeviceSummary[] {
    return this.listed().map((b) => this.summary(b));
  }

  /** The JSON text of the device-list envelope, cached until the fleet changes (the hot path at 10,000 boxes). */
  deviceListBody(): string {
    if (this.listCache?.version !== this.versionCounter) {
      this.listCache = { version: this.versionCounter, body: JSON.stringify({ status: 'success', data: this.summaries() }) };
    }
    return this.listCache.body;
  }
}

function createBoxes({ devices, seed, start, serialPrefix = 'BX-' }: FleetOptions): SimBox[] {
  const layout = new Rng(deriveSeed(seed, 0));
  const width = Math.max(5, String(devices).length);
  const boxes: SimBox[] = [];
  let id = layout.int(1000, 1999);
  let siteLeft = 0;
  let location = '';
  let subnet = '';
  let host = 0;
  let siteIndex = 0;
  for (let i = 0; i < devices; i++) {
    if (siteLeft === 0) {
      siteLeft = layout.int(3, 40);
      location = `${layout.pick(CITIES)}, ${layout.pick(SITES)}`;
      subnet = `10.${(siteIndex >> 8) & 255}.${siteIndex & 255}`;
      siteIndex += 1;
      host = 10;
    }
    siteLeft -= 1;
    host += 1;
    id += layout.int(1, 5);
    const rng = new Rng(deriveSeed(seed, i + 1));
    const serial = `${serialPrefix}${String(i + 1).padStart(width, '0')}`;
    const onMains = rng.chance(0.8);
    const connected = rng.chance(0.97);
    const signalBase = clamp(rng.normal() * 10 - 78, -115, -55);
    const box: SimBox = {
      id,
      serial,
      name: `${rng.pick(ROOMS)} ${rng.int(1, 9)}`,
      location,
      ip: `${subnet}.${host > 254 ? 254 : host}`,
      firmware: pickFirmware(rng),
      registeredAt: start - rng.int(30, 900) * DAY - rng.int(0, DAY),
      connected,
      charge: onMains ? rng.range(60, 100) : rng.range(20, 95),
      onMains,
      drainRate: (rng.range(1.5, 6) * TICK_MS) / HOUR,
      chargeRate: (rng.range(12, 30) * TICK_MS) / HOUR,
      signal: clamp(signalBase + rng.normal() * 3, SIGNAL_MIN, SIGNAL_MAX),
      signalBase,
      lastSeen: connected ? start - rng.int(0, TICK_MS) : start - rng.int(MINUTE, 30 * MINUTE),
      staleUntil: null,
      listed: true,
      reconnectAt: connected ? null : start + rng.int(MINUTE, 30 * MINUTE),
      rng,
    };
    if (connected && rng.chance(0.01)) box.staleUntil = start + rng.int(5 * MINUTE, 40 * MINUTE);
    boxes.push(box);
  }
  return boxes;
}

function pickFirmware(rng: Rng): string {
  let roll = rng.next();
  for (const [version, share] of LAGGING_FIRMWARE) {
    if (roll < share) return version;
    roll -= share;
  }
  return MAJORITY_FIRMWARE;
}

/** One tick of one box: power, battery, signal, activity, connection. */
function stepBox(box: SimBox, t: number): void {
  const { rng } = box;
  if (box.onMains ? rng.chance(P_POWER_CUT) : rng.chance(P_POWER_BACK)) box.onMains = !box.onMains;
  box.charge = clamp(box.charge + (box.onMains ? box.chargeRate : -box.drainRate), 0, 100);
  box.signal = clamp(box.signal + (box.signalBase - box.signal) * 0.1 + rng.normal() * 1.5, SIGNAL_MIN, SIGNAL_MAX);

  if (!box.connected) {
    const dueBack = box.reconnectAt === null ? box.charge >= 5 : t >= box.reconnectAt;
    if (dueBack) connect(box, t);
    return;
  }
  if (box.charge <= 0) {
    // A flat battery: the box goes dark until power returns and it has charged a little.
    disconnect(box, null);
    return;
  }
  if (box.staleUntil !== null) {
    if (t < box.staleUntil) return; // still says connected, but no activity
    box.staleUntil = null;
    if (rng.chance(0.5)) {
      disconnect(box, t + Math.round(rng.exponential(8 * MINUTE)));
      return;
    }
  } else if (rng.chance(P_STALE)) {
    box.staleUntil = t + rng.int(5 * MINUTE, 40 * MINUTE);
    return;
  }
  if (rng.chance(P_DISCONNECT)) {
    disconnect(box, t + clamp(Math.round(rng.exponential(8 * MINUTE)), MINUTE, HOUR));
    return;
  }
  box.lastSeen = t - rng.int(0, TICK_MS - 1); // activity somewhere within the last tick
}

function connect(box: SimBox, t: number): void {
  box.connected = true;
  box.reconnectAt = null;
  box.staleUntil = null;
  box.lastSeen = t;
}

function disconnect(box: SimBox, reconnectAt: number | null): void {
  box.connected = false;
  box.staleUntil = null;
  box.reconnectAt = reconnectAt;
}

function applyAction(box: SimBox, action: BoxAction, t: number): void {
  switch (action.kind) {
    case 'disconnect':
      disconnect(box, Number.POSITIVE_INFINITY);
      break;
    case 'connect':
      if (box.charge < 5) box.charge = 5;
      connect(box, t);
      break;
    case 'battery':
      box.charge = action.level;
      box.onMains = false;
      break;
    case 'signal':
      box.signal = action.dbm;
      box.signalBase = action.dbm;
      break;
    case 'stale':
      if (box.connected) box.staleUntil = action.on ? Number.POSITIVE_INFINITY : null;
      if (box.connected && !action.on) box.lastSeen = t;
      break;
    case 'firmware':
      box.firmware = action.version;
      break;
    case 'listed':
      box.listed = action.on;
      break;
  }
}

function clamp(x: number, min: number, max: number): number {
  return x < min ? min : x > max ? max : x;
}
