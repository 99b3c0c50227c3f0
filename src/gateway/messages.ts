/**
 * The vendor's error messages, word for word (gateway-api-v1.md section 7). The simulator sends
 * them; the client recognises them. Two the vendor only describes; their wording is ours and is
 * written in the README ("Simulator decisions").
 */
export const MESSAGES = {
  unauthorized: 'Unauthorized. Missing or invalid account-secret-key',
  callNotFound: 'Call not found. Please check the call ID.',
  deviceNotFound: 'Device not found. Please verify the device_serial_id.',
  noDevices: 'No connected devices found for this account',
  invalidDeviceSerial: 'Invalid Salpre-type device serial. Please check the Devices menu in your dashboard.',
  invalidPhoneNumber: 'Invalid phone number format. Please use E.164 format, e.g. +14155550123.',
  invalidPerPage: 'Invalid per_page value',
} as const;

export const API_PREFIX = '/api/gateway/v1';

/** `box:<serial>`; a serial is letters, digits, dash, underscore and dot. */
export const BOX_FROM = /^box:([A-Za-z0-9._-]+)$/;
