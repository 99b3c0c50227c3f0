/**
 * How a destination number is kept: a keyed hash (HMAC-SHA256) that lets calls to the same
 * number be matched without storing it, and a masked form for people (`+1415•••0123`). The key is
 * derived from the account secret key, so the database alone does not reveal the numbers.
 */
import { createHmac } from 'node:crypto';

/** The hashing key for numbers, derived from the account secret key. */
export function numberHashKey(secretKey: string): Buffer {
  return createHmac('sha256', secretKey).update('boxwatch calls: destination number hash v1').digest();
}

/** Hex HMAC-SHA256 of the number with the key. */
export function hashNumber(key: Buffer, number: string): string {
  return createHmac('sha256', key).update(number.trim()).digest('hex');
}

/**
 * The number with its middle hidden: the first four digits and the last four stay (`+1415•••0123`);
 * a short number keeps two at each end; anything shorter than six digits is hidden whole.
 */
export function maskNumber(number: string): string {
  const trimmed = number.trim();
  const plus = trimmed.startsWith('+') ? '+' : '';
  const digits = trimmed.replace(/\D/g, '');
  if (digits.length < 6) return `${plus}•••`;
  const keep = digits.length >= 11 ? 4 : 2;
  return `${plus}${digits.slice(0, keep)}•••${digits.slice(-keep)}`;
}
