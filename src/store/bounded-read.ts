/**
 * The text of a small input file (a policy, a tokens file, a call), read at most `limit` bytes
 * whatever the file is: a device such as /dev/zero or a FIFO says size 0 and may never end, so the
 * size is not asked first; reading stops as soon as the limit is passed.
 */
import { open } from 'node:fs/promises';
import { ToolEnvelopeError } from 'tool-envelope/core';

/**
 * At most `limit` bytes of `file` as UTF-8; over it, `too-large` naming `what` and the file
 * (the rest is not read). Errors of the file system (ENOENT, EACCES) are thrown as they are.
 */
export async function readBoundedText(file: string, limit: number, what: string): Promise<string> {
  const handle = await open(file, 'r');
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.alloc(Math.min(64 * 1024, limit + 1 - total));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      total += bytesRead;
      if (total > limit) {
        throw new ToolEnvelopeError('too-large', `${what} ${file} is larger than ${limit} bytes`, {
          issues: [{ code: 'too-large', path: '', message: `is larger than ${limit} bytes`, params: { limit } }],
        });
      }
    }
    return Buffer.concat(chunks).toString('utf8');
  } finally {
    await handle.close();
  }
}
