/** `missing`: active while the box is absent from the device list (it was there before). */
import type { KindEvaluator } from './types.js';

export const evaluateMissing: KindEvaluator<'missing'> = (_rule, box) =>
  box.missingSince !== null
    ? { condition: 'active', value: 'missing', summary: `missing from the device list since ${new Date(box.missingSince).toISOString()}` }
    : { condition: 'inactive', value: 'present', summary: 'in the device list' };
