/** Audit record ids: time-ordered, so that index inserts append. */
import { randomFillSync } from 'node:crypto';

let idCounter = 0;
let idMs = 0;
let idPrefix = '';
// Two hex digits per byte, looked up: several times cheaper than Buffer#toString('hex') and
// number formatting for every id (an id is made for every call recorded).
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
// One crypto call per 1 024 ids instead of one per id.
const RANDOM_POOL = Buffer.allocUnsafe(4096);
let randomPos = RANDOM_POOL.length;

/**
 * A fresh audit record id that sorts by creation time (`aud_` + 12 hex digits of epoch ms +
 * 4 of a per-millisecond counter + 8 random), so that index inserts append instead of
 * landing at random places in the B-tree.
 */
export function newAuditId(): string {
  const now = Date.now();
  if (now !== idMs) {
    idMs = now;
    idCounter = 0;
    idPrefix = `aud_${now.toString(16).padStart(12, '0')}`;
  }
  const n = idCounter++ & 0xffff;
  if (randomPos + 4 > RANDOM_POOL.length) {
    randomFillSync(RANDOM_POOL);
    randomPos = 0;
  }
  const r = randomPos;
  randomPos += 4;
  const pool = RANDOM_POOL;
  return `${idPrefix}${HEX[n >> 8]}${HEX[n & 0xff]}${HEX[pool[r]!]}${HEX[pool[r + 1]!]}${HEX[pool[r + 2]!]}${HEX[pool[r + 3]!]}`;
}
