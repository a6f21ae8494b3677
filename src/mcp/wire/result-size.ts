/**
 * One limit on the size of a tool result, the same on both hops: what an upstream sends the
 * gateway, and what the gateway sends its client. A result over it is answered with the envelope
 * `result-too-large` (the upstream keeps running), never with a protocol error and a restart.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { type JsonValue, failure, toolError, type ToolOutcome } from 'tool-envelope/core';

/** The default limit: 10 MiB, the SDK's own limit of one stdio line. */
export const DEFAULT_MAX_RESULT_BYTES = 10 * 1024 * 1024;

/** The `data` key of the JSON-RPC error a transport puts in place of a message it dropped for its size. */
export const TOO_LARGE_MARK = 'tool-envelope/result-too-large';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Finds the top-level `"id"` of a JSON-RPC message fed in pieces, without keeping the message:
 * how a transport answers the right request when it drops a message that is too large. Any key
 * order works; strings and nesting are tracked byte by byte.
 */
export class TopLevelIdScanner {
  private depth = 0;
  private inString = false;
  private escaped = false;
  private expectKey = false;
  private str: number[] | undefined;
  private lastKey: string | undefined;
  private value: number[] | undefined;
  private found: string | number | undefined;

  /** Feeds the next bytes of the message. */
  feed(bytes: Uint8Array): void {
    for (const b of bytes) {
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (b === BACKSLASH) this.escaped = true;
        else if (b === QUOTE) {
          this.inString = false;
          this.endString();
          continue;
        }
        if (this.str && this.str.length < 256) this.str.push(b);
        continue;
      }
      if (this.value && this.depth === 1 && b !== QUOTE && b !== 0x2c && b !== 0x7d) {
        if (b > 0x20) this.value.push(b);
        continue;
      }
      if (this.value && b !== QUOTE) this.endNumber();
      switch (b) {
        case QUOTE:
          this.inString = true;
          this.str = this.depth === 1 ? [] : undefined;
          break;
        case 0x7b: // {
        case 0x5b: // [
          this.depth++;
          this.expectKey = this.depth === 1 && b === 0x7b;
          break;
        case 0x7d: // }
        case 0x5d: // ]
          this.depth--;
          break;
        case 0x2c: // ,
          if (this.depth === 1) this.expectKey = true;
          break;
        case 0x3a: // :
          if (this.depth === 1) {
            this.expectKey = false;
            if (this.lastKey === 'id') this.value = [];
          }
          break;
      }
    }
  }

  /** The top-level id, once seen. */
  id(): string | number | undefined {
    if (this.value) this.endNumber();
    return this.found;
  }

  private endString(): void {
    if (!this.str) return;
    const raw = Buffer.from(this.str).toString('utf8');
    this.str = undefined;
    let s: string;
    try {
      s = JSON.parse(`"${raw}"`) as string;
    } catch {
      s = raw;
    }
    if (this.expectKey) this.lastKey = s;
    else if (this.lastKey === 'id' && this.value) {
      this.found = s;
      this.value = undefined;
    }
  }

  private endNumber(): void {
    const text = Buffer.from(this.value!).toString('utf8');
    this.value = undefined;
    const n = Number(text);
    if (text !== '' && Number.isInteger(n)) this.found = n;
  }
}

/** The `result-too-large` outcome. */
export function tooLargeOutcome(upstream: string, bytes: number | undefined, limitBytes: number, hop: 'upstream' | 'client'): ToolOutcome {
  const size = bytes === undefined ? 'more' : `${bytes} bytes`;
  const where = hop === 'upstream' ? `Upstream '${upstream}' answered with ${size}` : `The answer to the client would be ${size}`;
  return failure(
    toolError(
      'internal',
      'result-too-large',
      `${where}, over the gateway's limit of ${limitBytes} bytes (--max-result-bytes). The result was dropped; the upstream keeps running.`,
      {
        retryable: false,
        remediation: 'Ask the tool for less (a narrower query, a page, a range), or raise --max-result-bytes.',
        details: { upstream, limitBytes, hop, ...(bytes !== undefined ? { bytes } : {}) },
      },
    ),
  );
}

/**
 * An upper bound of the JSON size of a value in bytes (every character of a string or key may take
 * 6 bytes, `\u00XX`; a number 25, as in `-0.0000012345678901234567`): a walk without serialising. It stops once past `budget`.
 */
export function jsonBytesBound(value: unknown, budget: number): number {
  let total = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && total <= budget) {
    const v = stack.pop();
    if (typeof v === 'string') total += 6 * v.length + 2;
    else if (Array.isArray(v)) {
      total += 2 + v.length;
      for (const x of v) stack.push(x);
    } else if (v !== null && typeof v === 'object') {
      total += 2;
      // for...in, not Object.entries: no array per key on this per-call path. Inherited enumerable
      // keys (never in parsed JSON) would only be counted too, and the bound stays an upper bound.
      for (const k in v) {
        total += 6 * k.length + 4;
        stack.push((v as Record<string, unknown>)[k]);
      }
    } else total += 25;
  }
  return total;
}

/**
 * The size the gateway's answer would have, when it may exceed `limitBytes`: the upstream's
 * result plus the envelope's copy of its result plus the preview. `undefined` when a cheap upper
 * bound shows it fits (the common case: no serialization per call).
 */
export function answerBytesOver(raw: CallToolResult, result: JsonValue | undefined, previewLimitBytes: number, limitBytes: number): number | undefined {
  const overhead = previewLimitBytes + 4096;
  const budget = limitBytes - overhead;
  if (jsonBytesBound(raw, budget) + jsonBytesBound(result, budget) <= budget) return undefined;
  const bytes = Buffer.byteLength(JSON.stringify(raw)) + (result === undefined ? 0 : Buffer.byteLength(JSON.stringify(result))) + overhead;
  return bytes > limitBytes ? bytes : undefined;
}
