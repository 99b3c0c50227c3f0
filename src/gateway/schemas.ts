/**
 * Response shapes of the Gateway API v1, parsed at the boundary. Objects are loose: the vendor
 * says shapes may evolve, so unknown extra fields are tolerated; missing or mistyped required
 * fields are not. Both the client (to parse) and the simulator (to check its own output in tests)
 * use these.
 */
import { z } from 'zod';
import { TEXT_CAPS, TRUNCATED_MARK, truncate } from '../text.js';
import { inTimeRange, TIME_RANGE_TEXT } from '../time.js';

/** The longest timestamp text accepted (an ISO 8601 time is at most about 30 characters). */
const TIMESTAMP_MAX = 64;

/**
 * Parsed once per value (a device list holds one per box), in one check that tells the three
 * problems apart: zod runs each check of a field through its own step, so one check per value
 * is cheaper over a large device list than a `.max()` followed by this one.
 */
const isoTimestamp = z.string().check((ctx) => {
  const message = timestampProblem(ctx.value);
  if (message !== null) ctx.issues.push({ code: 'custom', message, input: ctx.value });
});

function timestampProblem(s: string): string | null {
  if (s.length > TIMESTAMP_MAX) return `must be at most ${TIMESTAMP_MAX} characters`;
  const t = Date.parse(s);
  if (Number.isNaN(t)) return 'expected an ISO 8601 timestamp';
  return inTimeRange(t) ? null : `must lie within ${TIME_RANGE_TEXT}`;
}

/**
 * A text field stored and rendered by boxwatch: cut at its cap and marked (src/text.ts). An
 * `overwrite` rather than a `transform`: the same value, without a pipe per field (a third of the
 * device list's validation time at 10,000 boxes).
 */
const cappedText = (max: number) => z.string().overwrite((s) => truncate(s, max, TRUNCATED_MARK));

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * A box's identity: never cut (two long serials could become one), so a serial that is empty,
 * too long or holds control characters makes its record invalid. One check naming each problem
 * (zod runs each check of a field through its own step, and this runs for every record of every
 * device list).
 */
const serial = z.string().check((ctx) => {
  const s = ctx.value;
  const problem = (message: string): void => void ctx.issues.push({ code: 'custom', message, input: s });
  if (s.length === 0) problem('must not be empty');
  if (s.length > TEXT_CAPS.serial) problem(`must be at most ${TEXT_CAPS.serial} characters`);
  if (CONTROL.test(s)) problem('must not contain control characters');
  // boxwatch names a box of a second account ACCOUNT/SERIAL (src/box-id.ts): a "/" would be ambiguous.
  if (s.includes('/')) problem('must not contain "/"');
});

/**
 * One device of the device list. Values outside their range (battery below 0 or above 100, a time
 * outside 2000..2100) make the record invalid: the client sets such a record aside on its own.
 */
export const deviceSummarySchema = z.looseObject({
  id: z.number().int(),
  serial_no: serial,
  device_name: cappedText(TEXT_CAPS.name),
  connected: z.boolean(),
  battery_level: z.number().int().min(0).max(100).nullable(),
  last_seen: isoTimestamp,
  firmware_version: cappedText(TEXT_CAPS.firmware),
});
export type DeviceSummary = z.infer<typeof deviceSummarySchema>;

export const deviceSchema = deviceSummarySchema.extend({
  /** dBm: 0 or below. */
  signal_strength: z.number().int().min(-200).max(0),
  registered_at: isoTimestamp,
  location: cappedText(TEXT_CAPS.location),
  ip_address: cappedText(TEXT_CAPS.ip),
});
export type Device = z.infer<typeof deviceSchema>;

export const callSummarySchema = z.looseObject({
  call_id: z.string(),
  status: z.string(),
  from: z.string(),
  to: z.string(),
  agent_id: z.number().int(),
  direction: z.string(),
  started_at: isoTimestamp,
  ended_at: isoTimestamp.optional(),
  duration_sec: z.number().int().optional(),
});
export type CallSummary = z.infer<typeof callSummarySchema>;

export const callSchema = callSummarySchema.extend({
  audio_record_url: z.string().optional(),
  transcript: z.string().optional(),
  variables: z.record(z.string(), z.string()).optional(),
});
export type Call = z.infer<typeof callSchema>;

export const makeCallResultSchema = z.looseObject({
  call_id: z.string(),
  status: z.string(),
  agent_id: z.number().int(),
  from: z.string(),
  to: z.string(),
});
export type MakeCallResult = z.infer<typeof makeCallResultSchema>;

export const pageMetaSchema = z.looseObject({
  per_page: z.number().int(),
  page: z.number().int(),
  has_next: z.boolean(),
});
export type PageMeta = z.infer<typeof pageMetaSchema>;

export const errorEnvelopeSchema = z.looseObject({
  status: z.literal('error'),
  message: z.string(),
});

export function successEnvelope<T extends z.ZodType>(data: T) {
  return z.looseObject({ status: z.literal('success'), data });
}

export const callListEnvelopeSchema = z.looseObject({
  status: z.literal('success'),
  data: z.array(callSummarySchema),
  meta: pageMetaSchema,
});
