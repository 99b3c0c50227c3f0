/**
 * Alertmanager's webhook message (version 4) as a strict zod schema, derived from Alertmanager's
 * source: notify/webhook/webhook.go (`Message`: version, groupKey, truncatedAlerts, plus the
 * embedded template.Data) and template/template.go (`Data`: receiver, status, alerts,
 * groupLabels, commonLabels, commonAnnotations, externalURL; `Alert`: status, labels,
 * annotations, startsAt, endsAt, generatorURL, fingerprint). Strict: an extra or missing key
 * fails. test/notify/alertmanager.real.test.ts checks this schema against what a real Alertmanager
 * sends, so the schema cannot drift from the real format.
 */
import { z } from 'zod';

const kv = z.record(z.string(), z.string());
const rfc3339 = z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);

export const webhookAlertSchema = z.strictObject({
  status: z.enum(['firing', 'resolved']),
  labels: kv,
  annotations: kv,
  startsAt: rfc3339,
  endsAt: rfc3339,
  generatorURL: z.string(),
  fingerprint: z.string().regex(/^[0-9a-f]{16}$/),
});

export const webhookMessageSchema = z.strictObject({
  receiver: z.string(),
  status: z.enum(['firing', 'resolved']),
  alerts: z.array(webhookAlertSchema),
  groupLabels: kv,
  commonLabels: kv,
  commonAnnotations: kv,
  externalURL: z.string(),
  version: z.literal('4'),
  groupKey: z.string(),
  truncatedAlerts: z.int().min(0),
});
