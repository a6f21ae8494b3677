/**
 * Base64 (RFC 4648, standard alphabet, padded) of bytes, in plain ECMAScript: the
 * core runs where there is no `Buffer`, so this is the one encoder every area uses.
 */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/**
 * The base64 text of `bytes` (RFC 4648 §4, with `=` padding).
 *
 * @example
 * ```ts
 * bytesToBase64(new TextEncoder().encode('hello')); // 'aGVsbG8='
 * ```
 */
export function bytesToBase64(bytes: Uint8Array): string {
  // Chunks keep the concatenated string flat: one long `+=` chain builds a deep rope.
  const parts: string[] = [];
  let chunk = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    chunk += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]! + ALPHABET[(n >> 6) & 63]! + ALPHABET[n & 63]!;
    if (chunk.length >= 8192) {
      parts.push(chunk);
      chunk = '';
    }
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i]! << 16;
    chunk += `${ALPHABET[n >> 18]!}${ALPHABET[(n >> 12) & 63]!}==`;
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    chunk += `${ALPHABET[n >> 18]!}${ALPHABET[(n >> 12) & 63]!}${ALPHABET[(n >> 6) & 63]!}=`;
  }
  parts.push(chunk);
  return parts.join('');
}
