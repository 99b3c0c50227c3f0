/**
 * `recording_lost`: recordings of the box expired at the vendor before the archive could download
 * them, within the last `window` (facts from the archive: src/rules/facts.ts). The alert
 * resolves once `window` has passed without a further loss.
 */
import { formatDuration } from '../duration.js';
import type { KindEvaluator } from './types.js';

export const evaluateRecordingLost: KindEvaluator<'recording_lost'> = (rule, box, ctx) => {
  const facts = ctx.calls?.byRule.get(rule.name);
  if (facts?.kind !== 'recording_lost') return { condition: 'unknown', value: null, summary: 'no fresh archive data' };
  const window = formatDuration(rule.window);
  const threshold = `a recording lost in the last ${window}`;
  const lost = facts.bySerial.get(box.serial);
  if (lost === undefined) return { condition: 'inactive', value: 0, threshold, summary: 'no recording lost' };
  const n = lost.count;
  return {
    condition: 'active',
    value: n,
    threshold,
    summary: `${n} recording${n === 1 ? '' : 's'} expired before ${n === 1 ? 'it' : 'they'} could be archived (in the last ${window})`,
  };
};
