/**
 * Internal helpers shared by the contract modules (`mcec.ts`, `dw.ts`, `contextos.ts` and their
 * revisions): Ajv error mapping and the full validators, the invalid-envelope error, loss
 * recording, hostile-key-safe property writes, category inference, and the two Durable Workflow
 * facts the other contracts carry too (its default version, its catalog-14 objects).
 * Not part of the public API.
 */
import { type Issue, ToolEnvelopeError, pointer } from '../errors.js';
import { type JsonObject, type JsonValue, isJsonObject } from '../json.js';
import type { ToolOutcome } from '../model.js';
import { DW_REASONS, type ErrorCategory, type OutcomeStatus, isErrorCategory } from '../taxonomy.js';
import type { AjvError, Loss } from './types.js';
import { createFullValidators, createRevisionFullValidators } from '../generated/core.js';

/**
 * Maps Ajv errors to issues. `required` and `additionalProperties` point at the
 * missing/extra property itself; `if` errors are dropped because Ajv always
 * reports the failing `then` rule beside them.
 */
export function issuesFromAjv(errors: readonly AjvError[] | null | undefined): Issue[] {
  const issues: Issue[] = [];
  if (!errors) return issues;
  // A rule reached through two schema paths (e.g. MCEC's error, checked by its
  // property and again by the ok:false branch) is reported once.
  const seen = new Set<string>();
  for (const e of errors) {
    if (e.keyword === 'if') continue;
    const id = `${e.keyword}\u0000${e.instancePath}\u0000${JSON.stringify(e.params)}`;
    if (seen.has(id)) continue;
    seen.add(id);
    let path = e.instancePath;
    if (e.keyword === 'required' && typeof e.params.missingProperty === 'string') {
      path += pointer([e.params.missingProperty]);
    } else if (e.keyword === 'additionalProperties' && typeof e.params.additionalProperty === 'string') {
      path += pointer([e.params.additionalProperty]);
    }
    issues.push({ code: e.keyword, path, message: e.message ?? e.keyword, params: { ...e.params } });
  }
  return issues;
}

/** The name of a full (allErrors) validator. */
export type FullValidatorName = keyof FullValidators;

/** The allErrors validators `check*()` reports from. */
type FullValidators = ReturnType<typeof createFullValidators> & ReturnType<typeof createRevisionFullValidators>;

let fullValidators: Partial<FullValidators> | undefined;

/**
 * Runs a full (allErrors) validator and returns its issues; `[]` when valid.
 * The full set is built on the first call: valid documents never need it.
 */
export function checkWith(name: FullValidatorName, doc: unknown): Issue[] {
  const all = (fullValidators ??= {});
  if (all[name] === undefined) {
    // Each set is built on its first use: a founding check never builds the revisions' validators.
    Object.assign(all, name === 'mcec202607Full' || name === 'dw14Full' ? createRevisionFullValidators(limits) : createFullValidators(limits));
  }
  const full = all[name]!;
  if (full(doc)) return [];
  const kept = full.errors?.length ?? 0;
  unlisted += Math.max(0, (full.total ?? kept) - kept);
  return issuesFromAjv(full.errors);
}

// The cap the full validators read on every error, and what the current bounded check left out.
const limits = { maxErrors: Number.POSITIVE_INFINITY };
let unlisted = 0;

/**
 * Runs `check` (synchronous, calling {@link checkWith}) with the full validators keeping at most
 * `maxIssues` errors, so that a document with millions of violations is checked in bounded
 * memory. Returns at most `maxIssues` issues and how many more violations the validators counted
 * (raw validator errors, before the de-duplication {@link issuesFromAjv} does).
 */
export function boundedCheck(maxIssues: number, check: () => Issue[]): { issues: Issue[]; unlisted: number } {
  const saved = { max: limits.maxErrors, unlisted };
  limits.maxErrors = Math.max(1, maxIssues);
  unlisted = 0;
  try {
    const all = check();
    const issues = all.length > maxIssues ? all.slice(0, maxIssues) : all;
    return { issues, unlisted: unlisted + (all.length - issues.length) };
  } finally {
    limits.maxErrors = saved.max;
    unlisted = saved.unlisted;
  }
}

/** Throws `invalid-envelope` with every issue the full validator finds. */
export function invalidEnvelope(title: string, issues: Issue[]): never {
  const first = issues[0];
  const where = first ? `: ${first.path || '(document)'} ${first.message}` : '';
  throw new ToolEnvelopeError('invalid-envelope', `not a valid ${title}${where}`, { issues });
}

/** Appends a loss to the collector, when there is one. */
export function lose(losses: Loss[] | undefined, path: string, code: string, reason: string): void {
  if (losses) losses.push({ path, code, reason });
}

/** True when a value carries information: not absent, not null, not an empty array or object. */
export function informative(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object') {
    for (const _ in value) return true;
    return false;
  }
  return true;
}

/** Defines an own enumerable data property (safe for `__proto__` and other hostile keys). */
export function defineOwn(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

const hasOwn = Object.prototype.hasOwnProperty;

/** `Object.hasOwn` for objects that may have a null prototype. */
export function owns(obj: object | undefined, key: string): boolean {
  return obj !== undefined && hasOwn.call(obj, key);
}

/**
 * Copies an open bag (unknown properties) onto `target`, skipping keys that
 * `target` already has or that are in `reserved`; each skipped key is a
 * `key-conflict` loss at `basePath/key`.
 */
export function copyBag(target: Record<string, unknown>, bag: JsonObject, reserved: ReadonlySet<string>, losses: Loss[] | undefined, basePath: string): void {
  for (const key of Object.keys(bag)) {
    if (reserved.has(key) || hasOwn.call(target, key)) {
      lose(losses, basePath + pointer([key]), 'key-conflict', `"${key}" is a field the target writes itself`);
      continue;
    }
    defineOwn(target, key, bag[key]);
  }
}

/** True for an array of strings. */
export function isStringArray(value: unknown): value is string[] {
  if (!Array.isArray(value)) return false;
  for (const v of value) if (typeof v !== 'string') return false;
  return true;
}

/** True for an array of plain objects. */
export function isObjectArray(value: unknown): value is JsonObject[] {
  if (!Array.isArray(value)) return false;
  for (const v of value) if (!isJsonObject(v)) return false;
  return true;
}

/** True for an array of exactly `{code: string, detail: string}` warnings. */
export function isWarningArray(value: unknown): value is { code: string; detail: string }[] {
  if (!Array.isArray(value)) return false;
  for (const w of value) {
    if (!isJsonObject(w) || typeof w.code !== 'string' || typeof w.detail !== 'string') return false;
    if (Object.keys(w).length !== 2) return false;
  }
  return true;
}

/** `string | null`. */
export function isNullableString(value: unknown): value is string | null {
  return value === null || typeof value === 'string';
}

/** `object | null`. */
export function isNullableObject(value: unknown): value is JsonObject | null {
  return value === null || isJsonObject(value);
}

/**
 * The category a Durable Workflow error or a ContextOS error string most likely
 * means, from its words (see docs/contracts.md, "Category inference").
 * Checked in order; the first rule that matches wins; `internal` otherwise.
 */
const INFERENCE_RULES: readonly (readonly [RegExp, ErrorCategory])[] = [
  [/time[\s_-]?out|timed[\s_-]?out|deadline/i, 'timeout'],
  [/ambiguous|matched[\s_-]?\d+|multiple[\s_-]?match/i, 'ambiguous-selector'],
  [/stale/i, 'stale-element'],
  [/not[\s_-]?found|no[\s_-]?target|missing[\s_-]?target|unknown[\s_-]?(target|resource)/i, 'no-target'],
  [/invalid|validation|malformed|bad[\s_-]?(argument|request|input)/i, 'invalid-argument'],
  [/blank|empty[\s_-]?capture/i, 'capture-blank'],
  [/foreground/i, 'foreground'],
  [/focus/i, 'focus'],
  [/forbidden|unauthori[sz]ed|permission|denied|elevation|approval|policy/i, 'elevation'],
];

/** Infers a category from the first informative text among `texts`. */
function inferCategory(...texts: (JsonValue | undefined)[]): ErrorCategory {
  for (const text of texts) {
    if (typeof text !== 'string' || text === '') continue;
    if (isErrorCategory(text)) return text;
    for (const [re, category] of INFERENCE_RULES) if (re.test(text)) return category;
  }
  return 'internal';
}

/**
 * The category of an error whose document does not state one: from its words
 * (`texts`, first informative match wins), else `elevation` for the approval
 * and policy statuses (`paused`, `rejected`, `blocked`), else `internal`.
 */
export function inferErrorCategory(status: OutcomeStatus, ...texts: (JsonValue | undefined)[]): ErrorCategory {
  const category = inferCategory(...texts);
  if (category === 'internal' && (status === 'paused' || status === 'rejected' || status === 'blocked')) {
    return 'elevation';
  }
  return category;
}

const REASON_CATEGORY = new Map<string, ErrorCategory>(Object.entries(DW_REASONS).map(([category, reason]) => [reason, category as ErrorCategory]));

/**
 * The category of a DW error that states none: its `reason` when it is one of
 * `DW_REASONS`; else the words of `code`, `reason`, `message` (in that
 * order; see docs/contracts.md); else `elevation` for paused/rejected/blocked; else `internal`.
 */
export function inferDwCategory(error: { code?: JsonValue; reason?: JsonValue; message?: JsonValue }, status: OutcomeStatus = 'error'): ErrorCategory {
  const byReason = typeof error.reason === 'string' ? REASON_CATEGORY.get(error.reason) : undefined;
  return byReason ?? inferErrorCategory(status, error.code, error.reason, error.message);
}

/**
 * An open object the encoder fills with carried canonical fields on top of a
 * base bag (DW `meta`, ContextOS `metadata`). The base is copied only when
 * something is put; a base key that a carried field overwrites is a
 * `key-conflict` loss at `basePath/key`.
 */
export function carrier(base: JsonObject | undefined, basePath: string, losses: Loss[] | undefined): Carrier {
  return new Carrier(base, basePath, losses);
}

/**
 * What {@link carrier} returns (a class: one object per encoded envelope, no closures, on the
 * encoders' hot path).
 */
export class Carrier {
  private bag: Record<string, unknown> | undefined = undefined;

  constructor(
    private readonly base: JsonObject | undefined,
    private readonly basePath: string,
    private readonly losses: Loss[] | undefined,
  ) {}

  put(key: string, value: unknown): void {
    const base = this.base;
    this.bag ??= base ? { ...base } : {};
    if (base && hasOwn.call(base, key)) {
      lose(this.losses, this.basePath + pointer([key]), 'key-conflict', `"${key}" is where the target carries a canonical field`);
    }
    // Keys are the encoder's own names, never untrusted input.
    this.bag[key] = value;
  }

  done(): JsonObject | undefined {
    return (this.bag ?? this.base) as JsonObject | undefined;
  }
}

/**
 * The Durable Workflow envelope `version` written when the canonical outcome has no
 * `schemaVersion`; every encoder treats it as no information.
 */
export const DW_VERSION = 1;

/**
 * Durable Workflow 14's top-level objects (unknown properties under 13) and the canonical fields
 * that carry them, with the shape a value must have to be lifted back (any DW document, and
 * ContextOS `metadata`).
 */
export const DW14_FIELDS: readonly (readonly [keyof ToolOutcome, string, (v: unknown) => boolean])[] = [
  ['rootCause', 'root_cause', isNullableObject],
  ['remediationPlan', 'remediation', isNullableObject],
  ['nextActions', 'next_actions', isObjectArray],
  ['safeMutation', 'mutation', isNullableObject],
];
