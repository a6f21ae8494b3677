// readDocuments refuses a document over the limit in the chunk that takes it past the limit,
// whatever its layout, and reads no further. A small limit and real streams stand in for the
// 64 MiB ones: the CLI runs in hostile-input.test.ts show the memory at full size.
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { type InputDocument, readDocuments } from './documents.js';

const LIMIT = 4096;
const CHUNK = 256;

/** `head`, then `row` over and over (far past the limit), in CHUNK-byte chunks; counts what was read. */
function endless(head: string, row: string): { stream: Readable; read: () => number } {
  const text = Buffer.from(head + row.repeat(Math.ceil((20 * LIMIT) / row.length)));
  let read = 0;
  const stream = new Readable({
    highWaterMark: CHUNK,
    read() {
      const chunk = text.subarray(read, read + CHUNK);
      read += chunk.length;
      this.push(chunk.length > 0 ? chunk : null);
    },
  });
  return { stream, read: () => read };
}

async function all(stream: Readable): Promise<InputDocument[]> {
  const docs: InputDocument[] = [];
  for await (const doc of readDocuments(stream, { documentLimit: LIMIT })) docs.push(doc);
  return docs;
}

describe('a document over the limit is refused as soon as it passes the limit', () => {
  it.each([
    ['pretty-printed', '\n{\n  "ok": true,\n  "result": [\n', '    {\n      "id": 1\n    },\n', { line: 2, offset: 1 }],
    ['pretty-printed, with CRLF lines of 60% of the limit', '{\r\n', `  "${'x'.repeat(LIMIT * 0.6)}",\r\n`, { line: 1, offset: 0 }],
    ['one line', '{"ok":true,"result":[', '{"id":1},', { line: 1, offset: 0 }],
    ['a document followed by another', '{\n  "ok": true\n}\n{\n  "ok": [\n', '    1,\n', { line: 1, offset: 0 }],
    ['padded with blank lines', '{"ok": true,\n', '\n', { line: 1, offset: 0 }],
    ['padded with spaces', '{"ok": true, ', ' ', { line: 1, offset: 0 }],
    ['a huge string value', '{\n  "ok": true,\n  "result": "', 'abcdefgh', { line: 1, offset: 0 }],
    ['deeply nested arrays, one a line', '  \n', '[\n', { line: 2, offset: 3 }],
    ['deeply nested arrays on one line', '', '[', { line: 1, offset: 0 }],
  ])('%s', async (_layout, head, row, at) => {
    const input = endless(head, row);
    const docs = await all(input.stream);
    expect(docs).toHaveLength(1);
    expect(docs[0]).toMatchObject({ ...at, index: 1, ndjson: false });
    expect(docs[0]!.error?.code).toBe('too-large');
    expect(docs[0]!.error?.message).toBe(`a document at offset ${at.offset} is larger than the ${LIMIT}-byte limit; the rest of the input is not read`);
    // The chunk that passed the limit, and the one the stream holds ready: no more.
    expect(input.read()).toBeLessThanOrEqual(LIMIT + 3 * CHUNK);
  });

  it('an NDJSON line over the limit after a good line', async () => {
    const input = endless('{"ok":true,"result":1}\n["', 'abcdefgh');
    const docs = await all(input.stream);
    expect(docs.map((d) => [d.line, d.index, d.offset, d.ndjson, d.error?.code])).toEqual([
      [1, 1, 0, true, undefined],
      [2, 2, 23, true, 'too-large'],
    ]);
    expect(docs[1]!.error?.message).toMatch(/^a line at offset 23 is larger/);
    expect(input.read()).toBeLessThanOrEqual(23 + LIMIT + 3 * CHUNK);
  });

  it('a whole-text document of exactly the limit (plus its newline) is read; one byte more is not', async () => {
    const exact = `[\n${' '.repeat(LIMIT - 4)}\n]`;
    const read = (text: string) => all(Readable.from([Buffer.from(text.slice(0, 1000)), Buffer.from(text.slice(1000))]));
    expect(await read(`${exact}\n`)).toEqual([{ line: 1, index: 1, offset: 0, ndjson: false, value: [] }]);
    expect(await read(`${exact}\r\n`)).toMatchObject([{ error: { code: 'too-large' } }]);
    expect(await read(` ${exact}\n`)).toMatchObject([{ error: { code: 'too-large' } }]);
  });
});
