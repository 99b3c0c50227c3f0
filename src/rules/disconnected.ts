/** `disconnected`: active while the gateway reports the box as not connected. */
import { bare, type KindEvaluator } from './types.js';
import { isoTime } from '../time-format.js';

export const evaluateDisconnected: KindEvaluator<'disconnected'> = (_rule, box, _ctx, _wasActive, words) =>
  box.connected
    ? words
      ? { condition: 'inactive', value: 'connected', summary: 'connected' }
      : bare('inactive')
    : { condition: 'active', value: 'disconnected', summary: `disconnected (last seen ${isoTime(box.lastSeen)})` };
