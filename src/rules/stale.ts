/**
 * `stale`: the gateway says the box is connected, but its last_seen is older than `max_age`.
 * The daemon's poller has already moved last_seen onto our clock (the gateway's skew, from the
 * HTTP Date header, subtracted), so it passes no gatewayNow; for uncorrected data `ctx.gatewayNow`
 * gives the gateway's clock to measure against. Either way a skew neither fires nor hides it.
 * A disconnected box is not stale (the `disconnected` rule covers it).
 */
import { formatDuration } from '../duration.js';
import { bare, type KindEvaluator } from './types.js';

export const evaluateStale: KindEvaluator<'stale'> = (rule, box, ctx, _wasActive, words) => {
  const threshold = words ? `last seen within ${formatDuration(rule.maxAge)}` : undefined;
  const reference = ctx.gatewayNow ?? ctx.now;
  // A last_seen slightly ahead of the Date header (second resolution) is an age of zero.
  const ageMs = Math.max(0, reference - box.lastSeen);
  const value = Math.round(ageMs / 1000);
  if (!box.connected) return { condition: 'inactive', value, threshold, summary: 'disconnected, not stale' };
  const active = ageMs > rule.maxAge;
  const condition = active ? 'active' : 'inactive';
  if (!words) return bare(condition);
  return {
    condition,
    value,
    threshold,
    summary: active
      ? `connected but last seen ${formatDuration(ageMs)} ago (more than ${formatDuration(rule.maxAge)})`
      : `last seen ${formatDuration(ageMs)} ago`,
  };
};
