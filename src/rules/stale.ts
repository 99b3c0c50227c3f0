/**
 * `stale`: the gateway says the box is connected, but its last_seen is older than `max_age`.
 * last_seen is a gateway timestamp, so its age is measured on the gateway's clock (the HTTP Date
 * header of the device list, `ctx.gatewayNow`): a skew between our clock and the gateway's then
 * neither fires nor hides the alert. Without a Date header our own clock is the fallback.
 * A disconnected box is not stale (the `disconnected` rule covers it).
 */
import { formatDuration } from '../duration.js';
import type { KindEvaluator } from './types.js';

export const evaluateStale: KindEvaluator<'stale'> = (rule, box, ctx) => {
  const threshold = `last seen within ${formatDuration(rule.maxAge)}`;
  const reference = ctx.gatewayNow ?? ctx.now;
  // A last_seen slightly ahead of the Date header (second resolution) is an age of zero.
  const ageMs = Math.max(0, reference - box.lastSeen);
  const value = Math.round(ageMs / 1000);
  if (!box.connected) return { condition: 'inactive', value, threshold, summary: 'disconnected, not stale' };
  const active = ageMs > rule.maxAge;
  return {
    condition: active ? 'active' : 'inactive',
    value,
    threshold,
    summary: active
      ? `connected but last seen ${formatDuration(ageMs)} ago (more than ${formatDuration(rule.maxAge)})`
      : `last seen ${formatDuration(ageMs)} ago`,
  };
};
