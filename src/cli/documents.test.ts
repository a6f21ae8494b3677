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

describe('offsets in a whole-text document with CRLF line endings', () => {
  /** The one document of `raw`, read in chunks of `chunk` bytes. */
  async function only(raw: Buffer, chunk: number): Promise<InputDocument> {
    const chunks: Buffer[] = [];
    for (let i = 0; i < raw.length; i += chunk) chunks.push(raw.subarray(i, i + chunk));
    const docs: InputDocument[] = [];
    for await (const doc of readDocuments(Readable.from(chunks))) docs.push(doc);
    expect(docs).toHaveLength(1);
    return docs[0]!;
  }
  const pretty = (lines: string[], eol: string, bom = false) => `${bom ? '\ufeff' : ''}${lines.join(eol)}${eol}`;
  // Pretty-printed (so one whole-text document), the bad part on its fourth line.
  const lines = ['{', '  "a": 1,', '  "list": [1, 2],', '  "b": BAD', '}'];

  it('an out-of-range number and a byte that is not UTF-8 are named at their offset in the input, as with LF', async () => {
    for (const eol of ['\n', '\r\n']) {
      for (const bom of [false, true]) {
        for (const chunk of [1, 7, 1 << 16]) {
          const big = Buffer.from(pretty(lines, eol, bom).replace('BAD', '1e400'));
          const number = await only(big, chunk);
          expect(number.error?.issues[0]?.params, `${JSON.stringify(eol)} bom ${bom} chunk ${chunk}`).toEqual({ offset: big.indexOf('1e400') });
          expect(number.error?.message).toContain(`at offset ${big.indexOf('1e400')} `);
          const [head, tail] = pretty(lines, eol, bom).replace('BAD', '"X"').split('X') as [string, string];
          const bad = Buffer.concat([Buffer.from(head), Buffer.from([0xff]), Buffer.from(tail)]);
          const utf8 = await only(bad, chunk);
          expect(utf8.error?.issues[0]?.params).toEqual({ offset: bad.indexOf(0xff) });
        }
      }
    }
  });

  it('mixed line endings and a CR that ends no line (JSON whitespace) move the offset by what they are', async () => {
    const raw = Buffer.from('{\r\n  "a":\r1,\n  "b": [\r\n 1e400]\r\n}');
    expect((await only(raw, 3)).error?.issues[0]?.params).toEqual({ offset: raw.indexOf('1e400') });
  });
});
