/**
 * The vendor's rule for placing a call (gateway-api-v1.md, 4.5): a call is placed only from a
 * connected box, read fresh through device details just before. Used by `boxwatch call` and by
 * test calls (test-calls.ts).
 */
import { BoxwatchError } from '../errors.js';
import { GatewayError } from '../gateway/errors.js';
import type { Device } from '../gateway/schemas.js';
import type { GatewayClient, RequestOptions } from '../gateway/types.js';
import { safeText } from '../text.js';
import { formatTime } from '../time-format.js';

/**
 * The box's details if it is connected; else BoxwatchError `box_not_found` or `box_disconnected`
 * (its message says why, ready to print). Other gateway errors are thrown as they are.
 */
export async function requireConnected(client: GatewayClient, serial: string, options?: RequestOptions): Promise<Device> {
  const device = await client.getDevice(serial, options).catch((err: unknown) => {
    if (err instanceof GatewayError && err.code === 'device_not_found') {
      throw new BoxwatchError('box_not_found', `box ${serial} is not known to the gateway (${err.message})`, { cause: err });
    }
    throw err;
  });
  if (!device.connected) {
    const seen = Date.parse(device.last_seen);
    const when = Number.isNaN(seen) ? safeText(device.last_seen) : formatTime(seen);
    throw new BoxwatchError('box_disconnected', `box ${serial} ("${safeText(device.device_name)}") is disconnected (last seen ${when})`);
  }
  return device;
}
