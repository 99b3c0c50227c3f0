/** `disconnected`: active while the gateway reports the box as not connected. */
import type { KindEvaluator } from './types.js';

export const evaluateDisconnected: KindEvaluator<'disconnected'> = (_rule, box) =>
  box.connected
    ? { condition: 'inactive', value: 'connected', summary: 'connected' }
    : { condition: 'active', value: 'disconnected', summary: `disconnected (last seen ${new Date(box.lastSeen).toISOString()})` };
