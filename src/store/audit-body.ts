/**
 * The on-disk form of a record's five JSON documents (call envelope, result envelope, outcome,
 * principal chain, policy decision) and its redaction note: one JSON array in the `body` column,
 * serialised once when a record is submitted (frozen) and read back into documents.
 */
import { type JsonObject, isPlainJsonContainer, ToolEnvelopeError } from 'tool-envelope/core';
import { jsonColumn as json, parsedColumn as parsed } from './json-column.js';
import { interruptedDocuments, isLeanStarted, type StartedIdentity } from './started-record.js';
import type { AuditRecord } from './types.js';

const frozenBodies = new WeakMap<AuditRecord, string>();

/** The `body` text of a record: the one it was frozen with, else serialised now (and kept). */
export function auditBodyText(r: AuditRecord): string {
  let body = frozenBodies.get(r);
  if (body === undefined) {
    body = auditBody(r);
    frozenBodies.set(r, body);
  }
  return body;
}

const isDocument = (v: unknown): boolean => typeof v === 'object' && v !== null;

/** Body flags (its sixth element): the principal chain is the call envelope's `principal_chain`. */
const SAME_CHAIN = 1;
/** Body flags: the outcome's `result` is the result envelope's `output`. */
const SAME_RESULT = 2;
/** Body flags: a started record's result envelope and outcome are left out (`0`), rebuilt from its columns on read. */
const LEAN_STARTED = 4;

// Shared only when JSON.stringify writes the object as it is (the one plain-JSON check, core/json.ts).
const plainForJson = (v: unknown): v is Record<string, unknown> => isPlainJsonContainer(v);

/**
 * The `body` text of a record: `[callEnvelope, resultEnvelope, outcome, principalChain, policyDecision]`
 * as one JSON array, made by one `JSON.stringify` (a flat string, nothing to concatenate).
 *
 * A document the record holds twice is written once: the governed runtime's call envelope carries
 * the principal chain itself, and its result envelope's `output` is the outcome's `result`. When
 * they are the same objects, the chain is written as `0` and the outcome's `result` as `0` (keeping
 * its place among the outcome's keys), and a sixth element says so ({@link documentsOf} puts them
 * back). Bodies of five elements (as written before) read as they always did. A started record made
 * by `startedAuditRecord` is written without its result envelope and outcome (both `0`): they say
 * only what its columns say, and a read rebuilds them (see started-record.ts).
 */
export function auditBody(r: AuditRecord): string {
  const frozen = frozenBodies.get(r);
  if (frozen !== undefined) return frozen;
  const decision = r.policyDecision ?? null;
  const call = r.callEnvelope;
  let chain: unknown = r.principalChain;
  if (isLeanStarted(r) && isDocument(call) && isDocument(chain)) {
    let flags = LEAN_STARTED;
    if (sharesChain(call, chain)) {
      chain = 0;
      flags |= SAME_CHAIN;
    }
    try {
      const redaction = r.redaction ?? null;
      return JSON.stringify(redaction === null ? [call, 0, 0, chain, decision, flags] : [call, 0, 0, chain, decision, flags, redaction]);
    } catch {
      // Fall through: serialise field by field to say which one is at fault.
    }
  } else {
    const res = r.resultEnvelope;
    let outcome: unknown = r.outcome;
    if (isDocument(call) && isDocument(res) && isDocument(outcome) && isDocument(chain)) {
      let flags = 0;
      // Same objects serialise to the same text (no toJSON, which would be told which key it is under).
      if (sharesChain(call, chain)) {
        chain = 0;
        flags |= SAME_CHAIN;
      }
      const result = (outcome as { result?: unknown }).result;
      if (plainForJson(res) && plainForJson(outcome) && plainForJson(result) && res.output === result) {
        outcome = { ...outcome, result: 0 };
        flags |= SAME_RESULT;
      }
      try {
        const redaction = r.redaction ?? null;
        if (redaction !== null) return JSON.stringify([call, res, outcome, chain, decision, flags, redaction]);
        return JSON.stringify(flags === 0 ? [call, res, outcome, chain, decision] : [call, res, outcome, chain, decision, flags]);
      } catch {
        // Fall through: serialise field by field to say which one is at fault.
      }
    }
  }
  return `[${json(r.callEnvelope, 'callEnvelope')},${json(r.resultEnvelope, 'resultEnvelope')},${json(r.outcome, 'outcome')},${json(
    r.principalChain,
    'principalChain',
  )},${decision === null ? 'null' : json(decision, 'policyDecision')}${r.redaction ? `,0,${json(r.redaction, 'redaction')}` : ''}]`;
}

/** True when the principal chain is the call envelope's own `principal_chain` (written once). */
function sharesChain(call: object, chain: unknown): boolean {
  return plainForJson(call) && call.principal_chain === chain && Array.isArray(chain) && plainForJson(chain);
}

/**
 * Serialises a record's JSON fields now and keeps the text with it, so that what gets stored
 * is the record as it is at this moment (later changes to the objects it references are not
 * recorded) and nothing is serialised twice. Throws `not-json-safe` for a value JSON cannot hold.
 */
export function freezeAuditRecord(r: AuditRecord): AuditRecord {
  frozenBodies.set(r, auditBody(r));
  return r;
}

/** A deep copy of a record through its JSON text (the form a database would give back). */
export function copyAuditRecord(r: AuditRecord): AuditRecord {
  const body = auditBody(r);
  const { seq: _seq, ...plain } = r;
  return {
    ...(JSON.parse(
      JSON.stringify({ ...plain, callEnvelope: null, resultEnvelope: null, outcome: null, principalChain: null, policyDecision: null }),
    ) as AuditRecord),
    ...documentsOf(body, r),
  };
}

/**
 * The five documents of a record (and its redaction note) from its `body` text. `ids`: the
 * record's columns, from which the documents a lean started body leaves out are rebuilt (without
 * them such a body is refused with `store-failure`).
 */
export function documentsOf(
  body: unknown,
  ids?: StartedIdentity,
): Pick<AuditRecord, 'callEnvelope' | 'resultEnvelope' | 'outcome' | 'principalChain' | 'policyDecision'> & { redaction?: AuditRecord['redaction'] } {
  const [callEnvelope, stored, storedOutcome, chain, policyDecision, flags, redaction] = parsed<unknown[]>(body) as [
    JsonObject,
    JsonObject,
    JsonObject,
    AuditRecord['principalChain'] | 0,
    AuditRecord['policyDecision'],
    number | undefined,
    AuditRecord['redaction'] | undefined,
  ];
  let resultEnvelope = stored;
  let outcome = storedOutcome;
  if (flags !== undefined && flags & LEAN_STARTED) {
    if (!ids) throw new ToolEnvelopeError('store-failure', 'a started record body needs its columns to be read');
    ({ resultEnvelope, outcome } = interruptedDocuments(ids));
  }
  // Documents written once (see auditBody) are shared again, as they were when recorded.
  const principalChain =
    flags !== undefined && flags & SAME_CHAIN
      ? (callEnvelope.principal_chain as unknown as AuditRecord['principalChain'])
      : (chain as AuditRecord['principalChain']);
  if (flags !== undefined && flags & SAME_RESULT) outcome.result = resultEnvelope.output as JsonObject;
  const docs = { callEnvelope, resultEnvelope, outcome, principalChain, policyDecision: policyDecision ?? null };
  return redaction ? { ...docs, redaction } : docs;
}
