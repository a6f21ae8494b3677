/**
 * The UTF-8 byte length of a string without encoding it (as `TextEncoder` would: a lone surrogate is
 * 3 bytes). A speed trick (bench/README.md): `Buffer.byteLength` where Node has it; elsewhere, and as
 * the reference the tests run, {@link utf8ByteLengthReference}.
 */

type ByteLength = (s: string, encoding: 'utf8') => number;

const nativeByteLength: ByteLength | undefined = (() => {
  const b = (globalThis as { Buffer?: { byteLength?: unknown } }).Buffer;
  return typeof b?.byteLength === 'function' ? (b.byteLength as ByteLength) : undefined;
})();

/** The plain reference of {@link utf8ByteLength}: a count over the string's code units. */
export function utf8ByteLengthReference(s: string): number {
  const n = s.length;
  let bytes = n;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) bytes += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < n && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      // A pair: 4 bytes for its two code units.
      bytes += 2;
      i++;
    } else bytes += 2;
  }
  return bytes;
}

/** How many bytes `s` takes in UTF-8 (lone surrogates counted as U+FFFD, as `TextEncoder` writes them). */
export function utf8ByteLength(s: string): number {
  return nativeByteLength !== undefined ? nativeByteLength(s, 'utf8') : utf8ByteLengthReference(s);
}
