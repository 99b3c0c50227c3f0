/** Phone numbers as the gateway takes them (gateway-api-v1.md): E.164. */

/** `+` then 8 to 15 digits, the first not 0. */
export const E164 = /^\+[1-9]\d{7,14}$/;
