/**
 * Error texts of the simulator beyond the vendor's list (gateway-api-v1.md section 7). The vendor
 * says "not shown" for these; our wording is documented in docs/simulator.md.
 */
export const SIM_MESSAGES = {
  invalidAgent: 'Invalid agent_id. The agent does not exist or is not active.',
  invalidPage: 'Invalid page value',
  notFound: 'Not found',
  methodNotAllowed: 'Method not allowed',
  unsupportedMediaType: 'Unsupported content type. Send the fields as multipart/form-data.',
  bodyTooLarge: 'Request body too large',
  rateLimited: 'Too many requests. Please retry later.',
  unavailable: 'Service temporarily unavailable. Please try again later.',
  serverError: 'Internal server error',
  recordingNotFound: 'Recording not found or expired',
} as const;

/** The message sent with an injected error status. */
export function messageForStatus(status: number): string {
  if (status === 429) return SIM_MESSAGES.rateLimited;
  if (status === 503 || status === 502 || status === 504) return SIM_MESSAGES.unavailable;
  if (status >= 500) return SIM_MESSAGES.serverError;
  return `Request failed with status ${status}`;
}
