/**
 * Reads an OTLP/HTTP protobuf trace export (`ExportTraceServiceRequest`, opentelemetry-proto
 * trace/v1) far enough for the tests: spans with their ids, names and string attributes, and the
 * resource's. A plain protobuf wire-format reader that throws on anything malformed (a truncated
 * field, an unknown wire type, bytes left over), so a body that is not protobuf does not decode.
 * Test support only.
 */

/** Fields of one message by number: the raw bytes of length-delimited ones, the value of varints. */
type Fields = Map<number, (Buffer | bigint)[]>;

function varint(buf: Buffer, at: { pos: number }): bigint {
  let value = 0n;
  for (let shift = 0n; shift < 70n; shift += 7n) {
    if (at.pos >= buf.length) throw new Error('protobuf: truncated varint');
    const b = buf[at.pos++]!;
    value |= BigInt(b & 0x7f) << shift;
    if ((b & 0x80) === 0) return value;
  }
  throw new Error('protobuf: varint too long');
}

function fields(buf: Buffer): Fields {
  const out: Fields = new Map();
  const at = { pos: 0 };
  while (at.pos < buf.length) {
    const key = varint(buf, at);
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    let value: Buffer | bigint;
    if (wire === 0) value = varint(buf, at);
    else if (wire === 1 || wire === 5 || wire === 2) {
      const length = wire === 1 ? 8 : wire === 5 ? 4 : Number(varint(buf, at));
      if (at.pos + length > buf.length) throw new Error('protobuf: truncated field');
      value = buf.subarray(at.pos, at.pos + length);
      at.pos += length;
    } else throw new Error(`protobuf: wire type ${wire}`);
    if (field === 0) throw new Error('protobuf: field 0');
    out.set(field, [...(out.get(field) ?? []), value]);
  }
  return out;
}

const bytes = (f: Fields, n: number): Buffer[] => (f.get(n) ?? []).filter((v): v is Buffer => Buffer.isBuffer(v));
const text = (f: Fields, n: number): string => bytes(f, n)[0]?.toString('utf8') ?? '';

/** `KeyValue` list -> key to string value (other value kinds are left out). */
function stringAttributes(list: Buffer[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of list) {
    const f = fields(kv);
    const value = bytes(f, 2)[0];
    if (value) {
      const s = bytes(fields(value), 1)[0];
      if (s) out[text(f, 1)] = s.toString('utf8');
    }
  }
  return out;
}

/** A span of an export, with its resource's attributes. */
export interface DecodedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  attributes: Record<string, string>;
  resource: Record<string, string>;
}

/** The spans of an `ExportTraceServiceRequest` body; throws when it is not one. */
export function decodeTraceExport(body: Buffer): DecodedSpan[] {
  const spans: DecodedSpan[] = [];
  for (const rs of bytes(fields(body), 1)) {
    const resourceSpans = fields(rs);
    const resourceMessage = bytes(resourceSpans, 1)[0];
    const resource = resourceMessage ? stringAttributes(bytes(fields(resourceMessage), 1)) : {};
    for (const ss of bytes(resourceSpans, 2)) {
      for (const s of bytes(fields(ss), 2)) {
        const span = fields(s);
        spans.push({
          traceId: bytes(span, 1)[0]?.toString('hex') ?? '',
          spanId: bytes(span, 2)[0]?.toString('hex') ?? '',
          parentSpanId: bytes(span, 4)[0]?.toString('hex') ?? '',
          name: text(span, 5),
          attributes: stringAttributes(bytes(span, 9)),
          resource,
        });
      }
    }
  }
  return spans;
}
