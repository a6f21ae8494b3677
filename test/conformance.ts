/**
 * The property suite every wire format goes through (one `describe` per
 * contract): generated valid documents validate under the oracle and round
 * trip exactly; the fast and the full validator agree with the oracle on valid
 * and mutated documents; decoding an invalid document throws
 * `invalid-envelope` with located issues; encoded canonical values validate.
 *
 * @example
 * ```ts
 * conformanceSuite({ name: 'MCEC', oracle: 'mcec', docs: mcecDoc, validate: validateMcec, check: checkMcec,
 *   decode: decodeMcec, encode: encodeMcec, canonical: toolOutcome });
 * ```
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ToolEnvelopeError } from '../src/core/errors.js';
import type { Issue } from '../src/core/errors.js';
import type { JsonObject } from '../src/core/json.js';
import { mutated } from './arbitraries.js';
import { type OracleContract, oracleValidate } from './oracle.js';

/**
 * The per-run budget: at least 1000 runs per contract and property.
 *
 * @example
 * ```ts
 * fc.assert(fc.property(dwDoc, (d) => validateDw(d)), RUNS);
 * ```
 */
export const RUNS = { numRuns: 1000 } as const;

/**
 * What {@link conformanceSuite} needs to know about one wire format.
 *
 * @example
 * ```ts
 * const s: SuiteSubject<ToolOutcome, DwToolResult> = { name: 'DW', oracle: 'dw', docs: dwDoc, validate: validateDw,
 *   check: checkDw, decode: decodeDw, encode: (o) => encodeDw(o), canonical: toolOutcome };
 * ```
 */
export interface SuiteSubject<C, W> {
  name: string;
  oracle: OracleContract;
  docs: fc.Arbitrary<JsonObject>;
  validate(doc: unknown): boolean;
  check(doc: unknown): Issue[];
  decode(doc: unknown): C;
  encode(value: C): W;
  canonical: fc.Arbitrary<C>;
  /** The share of mutated documents that must be invalid (default 0.5; open schemas accept more mutations). */
  minInvalidShare?: number;
}

/**
 * Asserts that decoding `doc` throws `invalid-envelope` carrying located issues, and never anything else.
 *
 * @example
 * ```ts
 * expectInvalidEnvelope(decodeMcec, { ok: false }).issues[0].path; // '/error'
 * ```
 */
export function expectInvalidEnvelope(decode: (doc: unknown) => unknown, doc: unknown): ToolEnvelopeError {
  let thrown: unknown;
  try {
    decode(doc);
  } catch (e) {
    thrown = e;
  }
  expect(thrown).toBeInstanceOf(ToolEnvelopeError);
  const err = thrown as ToolEnvelopeError;
  expect(err.code).toBe('invalid-envelope');
  expect(err.issues.length).toBeGreaterThan(0);
  for (const issue of err.issues) {
    expect(typeof issue.code).toBe('string');
    expect(issue.path === '' || issue.path.startsWith('/')).toBe(true);
  }
  return err;
}

/**
 * Registers the property suite for one wire format.
 *
 * @example
 * ```ts
 * conformanceSuite(subject);
 * ```
 */
export function conformanceSuite<C, W>(s: SuiteSubject<C, W>): void {
  describe(`${s.name}: conformance properties`, () => {
    it('generated documents are valid (oracle, fast and full validator) and encode(decode(doc)) deep-equals doc', () => {
      fc.assert(
        fc.property(s.docs, (doc) => {
          expect(oracleValidate(s.oracle, doc).valid).toBe(true);
          expect(s.validate(doc)).toBe(true);
          expect(s.check(doc)).toEqual([]);
          // Unknown properties, null vs absent, hostile keys: all must survive.
          expect(s.encode(s.decode(doc))).toStrictEqual(doc);
        }),
        RUNS,
      );
    });

    it('the fast and the full validator agree with the oracle on mutated documents; decode rejects exactly the invalid ones', () => {
      let invalid = 0;
      fc.assert(
        fc.property(mutated(s.docs), (doc) => {
          const oracle = oracleValidate(s.oracle, doc).valid;
          expect(s.validate(doc)).toBe(oracle);
          const issues = s.check(doc);
          expect(issues.length === 0).toBe(oracle);
          if (oracle) {
            expect(() => s.decode(doc)).not.toThrow();
          } else {
            invalid++;
            const err = expectInvalidEnvelope(s.decode, doc);
            expect(err.issues).toEqual(issues);
          }
        }),
        RUNS,
      );
      // The mutations must mostly break documents, or the property proves little.
      expect(invalid).toBeGreaterThan(RUNS.numRuns * (s.minInvalidShare ?? 0.5));
    });

    it('every encoded canonical value validates under the oracle', () => {
      fc.assert(
        fc.property(s.canonical, (value) => {
          const doc = s.encode(value);
          const verdict = oracleValidate(s.oracle, doc);
          expect(verdict.errors).toEqual([]);
          expect(s.validate(doc)).toBe(true);
        }),
        RUNS,
      );
    });
  });
}
