/**
 * The hash chain's link and signatures (see chain.ts for the scheme): what a writer computes for
 * each batch it commits. Imports only Node built-ins, as the SQLite audit writer thread loads it.
 */
import type { createHmac, KeyObject } from 'node:crypto';
import * as zlib from 'node:zlib';

/** CRC-32 of bytes, where Node has it (20.15+); the chain works without (no per-record digests). */
export const crc32: ((data: Uint8Array) => number) | undefined = (zlib as unknown as { crc32?: (d: Uint8Array) => number }).crc32;

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/**
 * One link of a writer's chain. `bytes` holds the batch's rows one after another,
 * `meta` their `[start, headerEnd, end]`; `digests` given (verification) or computed (writing).
 */
export function chainLink(
  hmac: typeof createHmac,
  crc: ((data: Uint8Array) => number) | undefined,
  key: KeyObject,
  writer: number,
  prev: string,
  firstN: number,
  bytes: Buffer,
  meta: Uint32Array,
  givenDigests?: string,
): { mac: string; digests: string; lastN: number } {
  const n = (meta.length / 3) | 0;
  let digests = givenDigests;
  if (digests === undefined) {
    digests = '';
    if (crc)
      for (let i = 0; i < n; i++) {
        const c = crc(bytes.subarray(meta[3 * i], meta[3 * i + 2]));
        // Eight hex digits looked up, the same text as `(c >>> 0).toString(16).padStart(8, '0')` at a fraction of its cost (radix formatting of a double).
        digests += `${HEX[(c >>> 24) & 0xff]}${HEX[(c >>> 16) & 0xff]}${HEX[(c >>> 8) & 0xff]}${HEX[c & 0xff]}`;
      }
  }
  const lastN = firstN + n - 1;
  const mac = hmac('sha256', key).update(`${prev}|${writer}|${firstN}|${lastN}|${digests}|`).update(bytes).digest('base64url');
  return { mac, digests, lastN };
}

/** The signatures of a writer's registration and of its head. */
export function chainSign(hmac: typeof createHmac, key: KeyObject, text: string): string {
  return hmac('sha256', key).update(text).digest('base64url');
}
