/**
 * DW 14's safe `mutation` and ContextOS `mutations` (docs/contracts.md, "Safe mutation"): the
 * reference reads back to exactly the object, only the objects it can hold become one, and
 * conversion between the two contracts keeps the mutation with exact loss reports, every document
 * valid under the oracle compiled from the vendored published schemas.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RUNS } from '../../../test/conformance.js';
import { contextosResultDoc, dw14Doc, dwSafeMutation, safeMutationReferenceText, text } from '../../../test/arbitraries.js';
import { oracleValidate } from '../../../test/oracle.js';
import { type JsonObject, type JsonValue, isJsonObject } from '../json.js';
import { decodeContextosResult, encodeContextosResult } from './contextos.js';
import { decodeDw14 } from './dw-14.js';
import { convert } from './registry.js';
import { parseSafeMutationReference, safeMutationReference } from './safe-mutation.js';

const KEYS = ['schema', 'version', 'tool', 'operation', 'safe', 'applied', 'reason'];
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const wellFormed = (t: unknown): boolean => typeof t !== 'string' || !LONE_SURROGATE.test(t);

/** What a reference can hold, stated from the schema independently of the code under test. */
function referable(m: JsonValue | undefined): boolean {
  if (!isJsonObject(m) || m.applied !== true) return false;
  if (!Object.keys(m).every((k) => KEYS.includes(k))) return false;
  if (m.reason !== undefined && typeof m.reason !== 'string') return false;
  return wellFormed(m.tool) && wellFormed(m.operation) && wellFormed(m.reason);
}

const idLosses = (code: string): boolean => code === 'missing-required-id' || code === 'missing-latency';

describe('safeMutationReference / parseSafeMutationReference', () => {
  it('a reference exactly for the mutations it can hold, and it reads back to the same object', () => {
    fc.assert(
      fc.property(dwSafeMutation, (m) => {
        expect(oracleValidate('dw@14', { schema: 'durable-workflow.v2.mcp-tool-result', version: 1, status: 'ok', mutation: m }).errors).toEqual([]);
        const ref = safeMutationReference(m);
        expect(ref !== undefined).toBe(referable(m));
        if (ref !== undefined) {
          expect(ref.startsWith('dw-safe-mutation:v')).toBe(true);
          expect(parseSafeMutationReference(ref)).toStrictEqual(m);
        }
      }),
      RUNS,
    );
  });

  it('reads only the spelling it writes: whatever it reads is a valid DW 14 mutation that writes the same text', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          safeMutationReferenceText,
          text,
          text.map((t) => `dw-safe-mutation:v1/${t}/x?safe=true`),
        ),
        (s) => {
          const m = parseSafeMutationReference(s);
          if (m === undefined) return;
          expect(safeMutationReference(m)).toBe(s);
          expect(oracleValidate('dw@14', { schema: 'durable-workflow.v2.mcp-tool-result', version: 1, status: 'ok', mutation: m }).errors).toEqual([]);
        },
      ),
      RUNS,
    );
    expect(parseSafeMutationReference('dw-safe-mutation:v1/%41/x?safe=true')).toBeUndefined();
    expect(parseSafeMutationReference('dw-safe-mutation:v1/A/x?safe=true')).toMatchObject({ tool: 'A', applied: true });
    expect(parseSafeMutationReference('dw-safe-mutation:v01/A/x?safe=true')).toBeUndefined();
    expect(parseSafeMutationReference('dw-safe-mutation:v1/%ZZ/x?safe=true')).toBeUndefined();
    expect(parseSafeMutationReference('dw-safe-mutation:v99999999999999999999/a/b?safe=true')).toBeUndefined();
  });
});

describe('DW 14 mutation ↔ ContextOS mutations', () => {
  it('DW 14 → ContextOS: an applied mutation is the last reference, any other rides in metadata.mutation; no loss at /safeMutation; back to DW 14 it is the same', () => {
    fc.assert(
      fc.property(dw14Doc, (doc) => {
        const outcome = decodeDw14(doc);
        const r = convert(doc, { from: 'dw@14', to: 'contextos' });
        expect(oracleValidate('contextos-result', r.document).errors).toEqual([]);
        const written = r.document as { mutations: string[]; metadata?: JsonObject };
        const before = outcome.mutations ?? [];
        const own = outcome.metadata !== undefined && Object.hasOwn(outcome.metadata, 'mutation');
        const ref = own ? undefined : safeMutationReference(doc.mutation);
        if (ref !== undefined) {
          expect(written.mutations).toEqual([...before, ref]);
          expect(written.metadata === undefined || !Object.hasOwn(written.metadata, 'mutation')).toBe(true);
        } else {
          expect(written.mutations).toEqual(before);
          if (doc.mutation !== undefined) expect(written.metadata?.mutation).toStrictEqual(doc.mutation);
        }
        // Exact losses: a key-conflict exactly when the outcome's own metadata has the key and there is a mutation to write.
        const at = r.losses.filter((l) => !idLosses(l.code) && (l.path === '/safeMutation' || l.path === '/metadata/mutation'));
        expect(at).toEqual(own && doc.mutation !== undefined ? [{ path: '/metadata/mutation', code: 'key-conflict', reason: expect.any(String) }] : []);
        if (doc.mutation === undefined) return;
        const back = convert(r.document, { from: 'contextos', to: 'dw@14' });
        expect(oracleValidate('dw@14', back.document).errors).toEqual([]);
        expect((back.document as JsonObject).mutation).toStrictEqual(doc.mutation);
      }),
      RUNS,
    );
  });

  it('ContextOS: encode(decode(doc)) is doc, and only a last exact reference without a metadata.mutation key is lifted', () => {
    fc.assert(
      fc.property(contextosResultDoc, (doc) => {
        const outcome = decodeContextosResult(doc);
        expect(encodeContextosResult(outcome)).toStrictEqual(doc);
        const mutations = doc.mutations as string[];
        const metadata = doc.metadata as JsonObject | undefined;
        const last = mutations.length > 0 ? parseSafeMutationReference(mutations[mutations.length - 1]!) : undefined;
        const lifted = last !== undefined && !(metadata !== undefined && Object.hasOwn(metadata, 'mutation'));
        if (lifted) {
          expect(outcome.safeMutation).toStrictEqual(last);
          expect(outcome.mutations).toEqual(mutations.slice(0, -1));
        } else {
          expect(outcome.mutations).toBe(mutations);
        }
      }),
      RUNS,
    );
  });
});
