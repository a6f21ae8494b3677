/**
 * Bytes gathered from a stream into one buffer that doubles as it fills, up to a ceiling. Holding
 * the chunks themselves would cost a Buffer object per chunk (a pipe fed a byte at a time hands
 * over millions), and joining them at the end would hold the bytes twice; here the bytes are in
 * one place, read in place. The room a doubling leaves is never written, so it is not resident.
 */

const FIRST_ROOM = 4 * 1024;
/** Room kept by {@link ByteRun.clear} for the next run; more is given back. */
const KEPT_ROOM = 64 * 1024;

/** An append-only run of bytes, read in place by {@link ByteRun.bytes}. */
export class ByteRun {
  private buffer: Buffer | undefined;
  /** Bytes appended since the last clear. */
  length = 0;

  /** `ceiling`: the most bytes the run is meant to hold; the buffer grows no larger unless told to. */
  constructor(private readonly ceiling: number) {}

  append(bytes: Uint8Array): void {
    const needed = this.length + bytes.length;
    if (this.buffer === undefined || needed > this.buffer.length) {
      const room = Math.max(needed, Math.min(this.ceiling, Math.max(FIRST_ROOM, 2 * (this.buffer?.length ?? 0))));
      const grown = Buffer.allocUnsafeSlow(room);
      this.buffer?.copy(grown, 0, 0, this.length);
      this.buffer = grown;
    }
    this.buffer.set(bytes, this.length);
    this.length = needed;
  }

  /** The bytes appended so far, in place: valid until the next append or clear. */
  bytes(): Buffer {
    return this.buffer === undefined ? Buffer.alloc(0) : this.buffer.subarray(0, this.length);
  }

  /** Empties the run; a large buffer is let go rather than kept for the next one. */
  clear(): void {
    this.length = 0;
    if (this.buffer !== undefined && this.buffer.length > KEPT_ROOM) this.buffer = undefined;
  }
}
