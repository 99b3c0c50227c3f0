/**
 * The GatewayClient interface: what the rest of boxwatch needs from the vendor's Gateway API.
 * The HTTP implementation lives in client.ts (on node:http); tests run one contract suite against it and the
 * simulator over real HTTP.
 */
import type { Call, CallSummary, Device, DeviceSummary, MakeCallResult, PageMeta } from './schemas.js';

export type Endpoint = 'make_call' | 'call_details' | 'call_list' | 'device_list' | 'device_details';

/** Reported once per HTTP attempt (for /metrics and the cycle's request count). */
export interface RequestEvent {
  endpoint: Endpoint;
  /** 'ok', or the GatewayErrorCode of the failure. */
  outcome: string;
  durationMs: number;
  /** 1 for the first attempt, 2 for the first retry, ... */
  attempt: number;
}

/** A device-list record set aside because it violates the schema. */
export interface RejectedRecord {
  /** Position in the list. */
  index: number;
  /** Its serial_no when that is a string (cut to its cap), else null. */
  serial: string | null;
  /** What is wrong: `battery_level: Too big: expected number to be <=100`. */
  problem: string;
}

export interface DeviceListResult {
  /** The valid records. */
  devices: DeviceSummary[];
  /** Records set aside (the rest of the fleet is processed as usual). */
  rejected: RejectedRecord[];
  /** The gateway's clock from the HTTP Date header (ms since epoch), null if absent or unparseable. */
  serverTime: number | null;
}

export interface CallListResult {
  items: CallSummary[];
  meta: PageMeta;
}

export interface MakeCallInput {
  /** `box:<serial>` */
  from: string;
  /** E.164 */
  to: string;
  agentId: string | number;
}

export interface RequestOptions {
  signal?: AbortSignal;
}

export interface GatewayClient {
  /** Throws GatewayError code 'no_devices' when the vendor says the account has none. */
  listDevices(options?: RequestOptions): Promise<DeviceListResult>;
  getDevice(serial: string, options?: RequestOptions): Promise<Device>;
  listCalls(params?: { perPage?: number; page?: number }, options?: RequestOptions): Promise<CallListResult>;
  getCall(id: string | number, options?: RequestOptions): Promise<Call>;
  /** Checked client-side first (box:<serial>, E.164); never retried once the request may have been sent. */
  makeCall(input: MakeCallInput, options?: RequestOptions): Promise<MakeCallResult>;
  close(): Promise<void>;
}
