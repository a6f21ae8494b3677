/**
 * Classifying plain failures (text that states no category, such as an MCP `isError` result) by rules
 * that are data (format in docs/contracts.md; shipped: rules/plain-failures.json; users' tried first).
 * A bad rule fails when the rule set is compiled (`invalid-option`), never at call time.
 */
import { type Issue, ToolEnvelopeError } from './errors.js';
import { type JsonObject, type JsonValue, isJsonObject } from './json.js';
import { type ErrorCategory, defaultRetryable, isErrorCategory } from './taxonomy.js';
import { plainFailureRuleSet } from './generated/core.js';
import { NeedleScanner } from './needle-scanner.js';
import { regexNeedles } from './regex-needles.js';

/** The `format` marker of a rule file. */
export const PLAIN_FAILURE_RULES_FORMAT = 'tool-envelope/plain-failure-rules@1';

/**
 * How much of a text the rules look at, in UTF-16 code units: the words that classify a
 * failure come first, and the bound keeps the time of a hostile text bounded.
 */
export const MAX_CLASSIFIED_TEXT = 4096;

/** One rule as written in a rule file. */
export interface PlainFailureRule {
  /** Unique within the file; reported as the rule that matched. */
  id: string;
  /** A JavaScript regular expression (source, without slashes), tried with the `i` flag (case-insensitive) unless `caseSensitive`. */
  pattern: string;
  /** `text` (default: the failure's text) or a JSON pointer into the structured content, whose string or number is matched. */
  in?: string;
  /** Match case-sensitively (default false). */
  caseSensitive?: boolean;
  category: ErrorCategory;
  /** Stable kebab-case code. */
  code: string;
  /** Default: false for `invalid-argument`, `elevation` and `no-target`, else the category's default. */
  retryable?: boolean;
  /** A machine reason (Durable Workflow `reason`). */
  reason?: string;
  /** Free text for the reader of the file. */
  note?: string;
}

/** A rule file: `{ format, rules }`. */
export interface PlainFailureRuleFile {
  format: typeof PLAIN_FAILURE_RULES_FORMAT;
  rules: PlainFailureRule[];
}

/** What {@link classifyPlainFailure} answers when a rule matched. */
export interface PlainFailureMatch {
  rule: string;
  /** The name the rule set was compiled with (`shipped` for the shipped one). */
  ruleSet: string;
  category: ErrorCategory;
  code: string;
  retryable: boolean;
  reason?: string;
}

/** What a failure offers the rules: its text and, when it has some, structured content. */
export interface PlainFailureInput {
  text: string;
  structured?: JsonValue;
}

interface Compiled {
  readonly re: RegExp;
  /** One of these must occur in the subject (lower-cased when `fold`) for `re` to be tried; null: always try. */
  readonly needles: readonly string[] | null;
  readonly fold: boolean;
  /** Pointer segments into the structured content; `undefined` for the text. */
  readonly at: readonly string[] | undefined;
  readonly match: PlainFailureMatch;
}

/** A compiled rule set (see {@link compileFailureRules}). */
export class CompiledFailureRules {
  /** @internal */
  readonly compiled: readonly Compiled[];
  /** @internal The needles of the text rules, one group per rule (same index); a structured-content rule's group is unused. */
  readonly scanner: NeedleScanner;
  readonly name: string;

  /** @internal Use {@link compileFailureRules}. */
  constructor(name: string, compiled: readonly Compiled[]) {
    this.name = name;
    this.compiled = compiled;
    this.scanner = new NeedleScanner(compiled.map((r) => (r.at === undefined ? r.needles : [])));
  }

  /** How many rules the set has. */
  get size(): number {
    return this.compiled.length;
  }
}

/** Categories whose inferred failures never say `retryable: true` unless a rule does. */
const NOT_RETRIED: ReadonlySet<ErrorCategory> = new Set(['invalid-argument', 'elevation', 'no-target']);
const RULE_KEYS = new Set(['id', 'pattern', 'in', 'caseSensitive', 'category', 'code', 'retryable', 'reason', 'note']);
const KEBAB = /^[a-z0-9]+(?:[-.][a-z0-9]+)*$/;

/** The `retryable` an inferred category gets when its rule does not say. */
export function inferredRetryable(category: ErrorCategory): boolean {
  return NOT_RETRIED.has(category) ? false : defaultRetryable(category);
}

function parsePointer(p: string): string[] | undefined {
  if (p === 'text') return undefined;
  return p
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/**
 * Validates and compiles a rule file (already parsed from JSON or YAML). Every problem is
 * reported at once, each at its JSON pointer (`/rules/3/pattern`), in one
 * `ToolEnvelopeError('invalid-option')` whose message names `source`.
 */
export function compileFailureRules(doc: unknown, name: string): CompiledFailureRules {
  const issues: Issue[] = [];
  const bad = (path: string, message: string, code = 'invalid'): void => {
    issues.push({ code, path, message });
  };
  const compiled: Compiled[] = [];
  if (!isJsonObject(doc)) bad('', 'a rule file must be an object { format, rules }', 'type');
  else {
    if (doc.format !== PLAIN_FAILURE_RULES_FORMAT) bad('/format', `must be "${PLAIN_FAILURE_RULES_FORMAT}"`, 'const');
    if (!Array.isArray(doc.rules)) bad('/rules', 'must be a list of rules', 'type');
    const ids = new Set<string>();
    (Array.isArray(doc.rules) ? (doc.rules as unknown[]) : []).forEach((r, i) => {
      const at = `/rules/${i}`;
      if (!isJsonObject(r)) {
        bad(at, 'a rule must be an object', 'type');
        return;
      }
      for (const k of Object.keys(r)) if (!RULE_KEYS.has(k)) bad(`${at}/${k}`, `unknown rule property "${k}"`, 'additionalProperties');
      const id = r.id;
      if (typeof id !== 'string' || id === '') bad(`${at}/id`, 'must be a non-empty string', 'type');
      else if (ids.has(id)) bad(`${at}/id`, `duplicate rule id "${id}"`, 'unique');
      else ids.add(id);
      if (!isErrorCategory(r.category)) bad(`${at}/category`, `"${String(r.category)}" is not an error category`, 'enum');
      if (typeof r.code !== 'string' || !KEBAB.test(r.code)) bad(`${at}/code`, 'must be a kebab-case string', 'pattern');
      if (r.retryable !== undefined && typeof r.retryable !== 'boolean') bad(`${at}/retryable`, 'must be a boolean', 'type');
      if (r.caseSensitive !== undefined && typeof r.caseSensitive !== 'boolean') bad(`${at}/caseSensitive`, 'must be a boolean', 'type');
      if (r.reason !== undefined && typeof r.reason !== 'string') bad(`${at}/reason`, 'must be a string', 'type');
      if (r.note !== undefined && typeof r.note !== 'string') bad(`${at}/note`, 'must be a string', 'type');
      const where = r.in ?? 'text';
      if (typeof where !== 'string' || (where !== 'text' && !where.startsWith('/')))
        bad(`${at}/in`, 'must be "text" or a JSON pointer such as "/error/code"', 'pattern');
      let re: RegExp | undefined;
      if (typeof r.pattern !== 'string' || r.pattern === '') bad(`${at}/pattern`, 'must be a non-empty string', 'type');
      else {
        try {
          re = new RegExp(r.pattern, r.caseSensitive === true ? '' : 'i');
        } catch (err) {
          bad(`${at}/pattern`, `is not a valid regular expression: ${(err as Error).message}`, 'pattern');
        }
      }
      if (issues.length > 0 || !re) return;
      const match: PlainFailureMatch = {
        rule: id as string,
        ruleSet: name,
        category: r.category as ErrorCategory,
        code: r.code as string,
        retryable: typeof r.retryable === 'boolean' ? r.retryable : inferredRetryable(r.category as ErrorCategory),
      };
      if (typeof r.reason === 'string') match.reason = r.reason;
      const fold = r.caseSensitive !== true;
      const needles = regexNeedles(r.pattern as string, fold);
      compiled.push({ re, needles, fold, at: parsePointer(where as string), match });
    });
  }
  if (issues.length > 0) {
    const first = issues[0]!;
    throw new ToolEnvelopeError(
      'invalid-option',
      `${name}: invalid plain-failure rules (${issues.length} problem${issues.length === 1 ? '' : 's'}; first: ${first.path || '/'} ${first.message})`,
      { issues },
    );
  }
  return new CompiledFailureRules(name, compiled);
}

let shipped: CompiledFailureRules | undefined;

/** The shipped rule set (`rules/plain-failures.json`), compiled on first use. */
export function shippedFailureRules(): CompiledFailureRules {
  return (shipped ??= compileFailureRules(plainFailureRuleSet(), 'shipped'));
}

function valueAt(doc: JsonValue | undefined, at: readonly string[]): string | undefined {
  let v: JsonValue | undefined = doc;
  for (const key of at) {
    if (Array.isArray(v)) v = v[Number(key)];
    else if (isJsonObject(v) && Object.hasOwn(v, key)) v = (v as JsonObject)[key];
    else return undefined;
  }
  if (typeof v === 'string') return v.length > MAX_CLASSIFIED_TEXT ? v.slice(0, MAX_CLASSIFIED_TEXT) : v;
  return typeof v === 'number' ? String(v) : undefined;
}

/**
 * The first rule that matches `input`, trying the rule sets in order (user rules before the
 * shipped ones) and each set's rules in file order; `null` when none does. Only the first
 * {@link MAX_CLASSIFIED_TEXT} characters of a text are looked at.
 */
export function classifyPlainFailure(input: PlainFailureInput, ruleSets: readonly CompiledFailureRules[]): PlainFailureMatch | null {
  const full = input.text;
  const text = full.length > MAX_CLASSIFIED_TEXT ? full.slice(0, MAX_CLASSIFIED_TEXT) : full;
  for (const set of ruleSets) {
    const rules = set.compiled;
    const scanner = set.scanner;
    let scanned = false;
    for (let i = 0; i < rules.length; i++) {
      const rule = rules[i]!;
      if (rule.at !== undefined) {
        const value = valueAt(input.structured, rule.at);
        if (value === undefined) continue;
        const needles = rule.needles;
        const hay = rule.fold ? value.toLowerCase() : value;
        if (needles !== null && !needles.some((n) => hay.includes(n))) continue;
        if (rule.re.test(value)) return rule.match;
        continue;
      }
      if (rule.needles !== null) {
        // A regular-expression scan of the text costs about as much as one pass of the scanner over
        // it, which answers for every rule of the set at once: a pattern is tried only when the
        // text holds one of its needles.
        if (!scanned) {
          scanner.scan(text);
          scanned = true;
        }
        if (!scanner.has(i)) continue;
      }
      if (rule.re.test(text)) return rule.match;
    }
  }
  return null;
}

/**
 * The plain reference of {@link classifyPlainFailure}: every rule's pattern tried in order, no
 * prefilter. Same answers, slower; the tests check that the two agree (bench/README.md, the rule
 * for speed tricks).
 */
export function classifyPlainFailureReference(input: PlainFailureInput, ruleSets: readonly CompiledFailureRules[]): PlainFailureMatch | null {
  const text = input.text.slice(0, MAX_CLASSIFIED_TEXT);
  for (const set of ruleSets) {
    for (const rule of set.compiled) {
      const subject = rule.at === undefined ? text : valueAt(input.structured, rule.at);
      if (subject !== undefined && rule.re.test(subject)) return rule.match;
    }
  }
  return null;
}
