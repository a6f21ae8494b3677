/**
 * The UTF-8 byte length of a string without encoding it: the number of bytes
 * `new TextEncoder().encode(s)` would hold (a surrogate pair is one 4-byte
 * character, a lone surrogate 3 bytes, the U+FFFD that replaces it).
 *
 * Speed trick (bench/README.md): it pays for the row `core: encode to JSON text
 * (stringifyEnvelope)` / `dw: stringifyEnvelope, 2.0 KiB result`, where deciding whether a
 * result's JSON text fits the 4 KiB preview took a `TextEncoder.encodeInto` of the whole
 * text. Where the runtime has Node's `Buffer.byteLength` (a count in native code, no bytes
 * written) that is used; elsewhere, and as the plain reference the tests also run,
 * {@link utf8ByteLengthReference} counts code units in JavaScript.
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
