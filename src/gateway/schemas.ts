/**
 * Response shapes of the Gateway API v1, parsed at the boundary. Objects are loose: the vendor
 * says shapes may evolve, so unknown extra fields are tolerated; missing or mistyped required
 * fields are not. Both the client (to parse) and the simulator (to check its own output in tests)
 * use these.
 */
import { z } from 'zod';

const isoTimestamp = z.string().refine((s) => !Number.isNaN(Date.parse(s)), { message: 'expected an ISO 8601 timestamp' });

export const deviceSummarySchema = z.looseObject({
  id: z.number().int(),
  serial_no: z.string(),
  device_name: z.string(),
  connected: z.boolean(),
  battery_level: z.number().int().nullable(),
  last_seen: isoTimestamp,
  firmware_version: z.string(),
});
export type DeviceSummary = z.infer<typeof deviceSummarySchema>;

export const deviceSchema = deviceSummarySchema.extend({
  signal_strength: z.number().int(),
  registered_at: isoTimestamp,
  location: z.string(),
  ip_address: z.string(),
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
