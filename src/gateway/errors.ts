/**
 * GatewayError: every failure of the Gateway API client, with a stable `code`.
 *
 * Classification accepts either signal the vendor may give: the HTTP status or the vendor's
 * message text (gateway-api-v1.md section 7 gives messages but no status codes). Nothing here ever
 * holds the account secret key: messages are built from our own words, the vendor's message and
 * copies of low-level errors made by `safeCause` (src/redact.ts).
 */
import { BoxwatchError } from '../errors.js';
import type { Endpoint } from './types.js';

export const GATEWAY_ERROR_CODES = [
  'unauthorized',
  'call_not_found',
  'device_not_found',
  'no_devices',
  'invalid_device_serial',
  'invalid_phone_number',
  'invalid_agent',
  'invalid_per_page',
  'rate_limited',
  'unavailable',
  'schema',
  'too_large',
  'invalid_argument',
  'rejected',
] as const;

/**
 * - `rejected`: the gateway answered with an error this client does not recognise (an unknown
 *   message on a 4xx, or a 404 without the vendor's envelope, e.g. a wrong base URL).
 * - `invalid_argument`: a client-side check failed; no request was sent.
 * - `too_large`: the response body was larger than the endpoint's limit and was aborted.
 */
export type GatewayErrorCode = (typeof GATEWAY_ERROR_CODES)[number];

/** Codes for which trying the same request again later may succeed. */
const RETRYABLE: ReadonlySet<GatewayErrorCode> = new Set(['rate_limited', 'unavailable']);

export interface GatewayErrorOptions {
  endpoint: Endpoint;
  status?: number;
  retryAfterMs?: number;
  cause?: unknown;
  /** Overrides the default retryability of the code (malformed JSON is retryable 'schema'). */
  retryable?: boolean;
}

export class GatewayError extends BoxwatchError {
  declare readonly code: GatewayErrorCode;
  readonly endpoint: Endpoint;
  /** HTTP status of the response, when there was one. */
  declare readonly status?: number;
  /** From a `Retry-After` header (429/503), in milliseconds. */
  declare readonly retryAfterMs?: number;

  constructor(code: GatewayErrorCode, message: string, options: GatewayErrorOptions) {
    super(code, message, { cause: options.cause, retryable: options.retryable ?? RETRYABLE.has(code) });
    this.endpoint = options.endpoint;
    if (options.status !== undefined) (this as { status?: number }).status = options.status;
    if (options.retryAfterMs !== undefined) (this as { retryAfterMs?: number }).retryAfterMs = options.retryAfterMs;
  }
}

/** Vendor message patterns, tolerant of small wording changes (the vendor describes two of them only). */
const MESSAGE_PATTERNS: [RegExp, GatewayErrorCode][] = [
  [/unauthori[sz]ed|account-secret-key/i, 'unauthorized'],
  [/call not found/i, 'call_not_found'],
  [/device not found/i, 'device_not_found'],
  [/no (connected )?devices found/i, 'no_devices'],
  [/invalid\b.*\bdevice serial/i, 'invalid_device_serial'],
  [/invalid phone number/i, 'invalid_phone_number'],
  [/invalid per_page/i, 'invalid_per_page'],
  [/\bagent/i, 'invalid_agent'],
];

/** The code a vendor error message names, or undefined if it is not one we know. */
export function codeFromMessage(message: string): GatewayErrorCode | undefined {
  for (const [pattern, code] of MESSAGE_PATTERNS) if (pattern.test(message)) return code;
  return undefined;
}

/**
 * A 404 with the vendor's envelope but an unknown message. Not for the device list: a 404 there
 * is more likely a wrong base URL than "no devices", which is recognised by its message.
 */
const NOT_FOUND_BY_ENDPOINT: Partial<Record<Endpoint, GatewayErrorCode>> = {
  call_details: 'call_not_found',
  device_details: 'device_not_found',
};

/**
 * Classifies an error response. Order: 429 and 5xx by status (transient whatever the text);
 * then the vendor's message; then the status (401/403 unauthorized; 404 with the vendor's error
 * envelope -> the endpoint's not-found code); anything else is 'rejected'.
 */
export function classifyErrorResponse(
  endpoint: Endpoint,
  status: number,
  message: string | undefined,
): GatewayErrorCode {
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'unavailable';
  const byMessage = message === undefined ? undefined : codeFromMessage(message);
  if (byMessage) return byMessage;
  if (status === 401 || status === 403) return 'unauthorized';
  if (status === 404 && message !== undefined) return NOT_FOUND_BY_ENDPOINT[endpoint] ?? 'rejected';
  return 'rejected';
}
