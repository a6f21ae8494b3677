/**
 * A policy rule's `when` condition: a CEL expression (cel.dev), checked and compiled once when the
 * policy is compiled, evaluated with @bufbuild/cel (an optional peer, loaded on the first policy
 * that has a condition), or for the common subset by policy-cel-fast.ts, which leaves to the library
 * every case it is not sure of. The checks here run before anything of the expression is evaluated: its
 * size and nesting (so that parsing and planning cannot exhaust the stack), the variables and
 * functions it names, the types of what can be known, and its worst-case cost. At run time the
 * cost is bounded again against the sizes of the call's collections, and anything that errs
 * answers an error: the rule then denies (`policy-rules.ts`).
 */
import { createRequire } from 'node:module';
import { type Issue, type JsonObject, missingPeer } from 'tool-envelope/core';
import { BAIL, fastCondition } from './policy-cel-fast.js';
import { GLOB_MAX_PATTERN, glob, host, toNumber, within } from './policy-helpers.js';

/**
 * The bounds of one `when` expression, checked at load: its text, how deep it nests (brackets
 * and AST), how many nodes its AST has, how deep comprehensions (`all`, `exists`, `map`, ...) nest,
 * and its cost (AST nodes times the sizes its comprehensions range over), estimated at load from
 * its literals and at run time from the call's collections. `maxTotalLength` bounds the text of
 * all of a policy's conditions together.
 */
export const WHEN_LIMITS = Object.freeze({
  maxLength: 1024,
  maxTotalLength: 32 * 1024,
  maxNesting: 32,
  maxNodes: 400,
  maxComprehensionNesting: 2,
  maxCost: 100_000,
});

/** The variables a condition may name (`docs/governance.md` says what each holds). */
export const WHEN_VARIABLES = Object.freeze(['args', 'tool', 'mode', 'chain', 'identity', 'session', 'riskTags', 'now'] as const);
export type WhenVariable = (typeof WHEN_VARIABLES)[number];

/** What a condition sees of a call. */
export interface WhenInput {
  args: JsonObject;
  tool: { name: string; annotations: JsonObject };
  mode: string;
  chain: { kind: string; id: string; tenant: string; verified: boolean }[];
  identity: { principal: string; tenant: string; roles: readonly string[]; claims: JsonObject };
  session: { id: string };
  riskTags: readonly string[];
  /** Milliseconds since the epoch; the condition sees a timestamp. */
  now: number;
}

/** A located problem of a condition: `line` and `column` count from 1 in the expression's text. */
export interface WhenIssue {
  code: 'syntax' | 'unknown-variable' | 'unknown-function' | 'type' | 'too-deep' | 'too-large' | 'cost';
  line: number;
  column: number;
  message: string;
}

/** A condition compiled once; `evaluate` never throws. */
export interface CompiledWhen {
  readonly source: string;
  /** The variables it names (only these are converted for it). */
  readonly variables: ReadonlySet<WhenVariable>;
  evaluate(call: WhenCall): { value: boolean } | { error: string };
}

// ---- the peer, loaded on first use -----------------------------------------------------------

type Cel = typeof import('@bufbuild/cel');
interface Peer {
  cel: Cel;
  env: ReturnType<Cel['celEnv']>;
  timestamp: (ms: number) => unknown;
}
let peer: Peer | undefined;
const requireHere = createRequire(import.meta.url);

function loadPeer(): Peer {
  if (peer) return peer;
  let cel: Cel;
  let wkt: { timestampFromMs(ms: number): unknown };
  try {
    cel = requireHere('@bufbuild/cel') as Cel;
    // Its own dependency, resolved from where it is installed: this package does not depend on it (pnpm would not find it here).
    wkt = createRequire(requireHere.resolve('@bufbuild/cel'))('@bufbuild/protobuf/wkt') as typeof wkt;
  } catch (e) {
    throw missingPeer(e, (e as Error)?.message?.includes('@bufbuild/protobuf') ? '@bufbuild/protobuf' : '@bufbuild/cel', "a policy rule's when condition");
  }
  const { celFunc, celEnv, CelScalar } = cel;
  const S = CelScalar.STRING;
  const funcs = [
    celFunc('within', [S, S], CelScalar.BOOL, (p, prefix) => within(p, prefix)),
    celFunc('host', [S], S, (u) => host(u)),
    celFunc('glob', [S, S], CelScalar.BOOL, (t, p) => glob(t, p)),
    celFunc('toNumber', [CelScalar.DYN], CelScalar.DOUBLE, (v) => toNumber(v)),
  ];
  peer = { cel, env: celEnv({ funcs }), timestamp: (ms) => wkt.timestampFromMs(ms) };
  return peer;
}

/**
 * What the conditions of one call see, shared by every condition evaluated for it: each variable
 * is converted to its CEL value once, when a condition first names it. Given plain objects, the
 * evaluator would convert them again at every access (a Map of the object's entries each time a
 * condition reads `args`), which cost more than the rest of the evaluation together.
 */
export class WhenCall {
  private readonly values: Record<string, unknown> = {};
  constructor(readonly input: WhenInput) {}
  /** The activation holding (at least) `names` as CEL values. */
  activation(names: readonly WhenVariable[]): Readonly<Record<string, unknown>> {
    const values = this.values;
    for (const n of names) if (!Object.hasOwn(values, n)) values[n] = celValue(n, this.input);
    return values;
  }
}

/** A variable's CEL value: lists and objects wrapped, not copied (what is inside is converted as it is read). */
function celValue(name: WhenVariable, input: WhenInput): unknown {
  if (name === 'now') return loadPeer().timestamp(input.now);
  return wrap(input[name]);
}

function wrap(v: unknown): unknown {
  if (Array.isArray(v)) return loadPeer().cel.celList(v);
  if (typeof v === 'object' && v !== null) return new ObjectMap(v as Record<string, unknown>);
  return v;
}

/**
 * The key @bufbuild/cel recognises its maps by (`isCelMap`): a registered symbol, so a map of ours
 * passes as one of its own. policy-cel.test.ts holds ObjectMap to the library's own conversion.
 */
const CEL_MAP = Symbol.for('@bufbuild/cel/map');

/**
 * A JSON object as a CEL map, read in place. The library's own conversion of a plain object copies
 * its entries into a Map on every access (0.7 µs for three keys), more than evaluating a simple
 * condition; this one reads the object, and wraps a nested object once when it is first read.
 */
class ObjectMap implements ReadonlyMap<string, unknown> {
  readonly [CEL_MAP] = {};
  private nested: Map<string, unknown> | undefined;
  constructor(private readonly o: Record<string, unknown>) {}
  get size(): number {
    return Object.keys(this.o).length;
  }
  get(key: unknown): unknown {
    if (typeof key !== 'string' || !Object.hasOwn(this.o, key)) return undefined;
    const v = this.o[key];
    if (typeof v !== 'object' || v === null) return v;
    this.nested ??= new Map();
    let w = this.nested.get(key);
    if (w === undefined) this.nested.set(key, (w = wrap(v)));
    return w;
  }
  has(key: unknown): boolean {
    // As the library's own maps answer (a key holding null is not there for has()), so that this changes no decision.
    return this.get(key) != null;
  }
  keys(): MapIterator<string> {
    return Object.keys(this.o)[Symbol.iterator]();
  }
  *values(): MapIterator<unknown> {
    for (const k of Object.keys(this.o)) yield this.get(k);
  }
  *entries(): MapIterator<[string, unknown]> {
    for (const k of Object.keys(this.o)) yield [k, this.get(k)];
  }
  forEach(callback: (value: unknown, key: string, map: ReadonlyMap<string, unknown>) => void, thisArg?: unknown): void {
    for (const k of Object.keys(this.o)) callback.call(thisArg, this.get(k), k, this);
  }
  [Symbol.iterator](): MapIterator<[string, unknown]> {
    return this.entries();
  }
}

// ---- checking ----------------------------------------------------------------------------------

class Refused extends Error {
  constructor(readonly issue: Omit<WhenIssue, 'line' | 'column'> & { offset: number }) {
    super(issue.message);
  }
}

function locate(source: string, at: number): { line: number; column: number } {
  // The parser places an infix operator just after its left operand, whitespace included: step onto the operator.
  let offset = at;
  while (offset < source.length && /\s/.test(source[offset] as string)) offset++;
  let line = 1;
  let start = 0;
  for (let i = 0; i < offset && i < source.length; i++) {
    if (source[i] === '\n') {
      line++;
      start = i + 1;
    }
  }
  return { line, column: offset - start + 1 };
}

/** How deep brackets and unary operators nest, outside string literals: refused before the parser (recursive) sees it. */
function scanNesting(source: string): void {
  let depth = 0;
  let unary = 0;
  for (let i = 0; i < source.length; i++) {
    const c = source[i] as string;
    if (c === '"' || c === "'") {
      const raw = i > 0 && (source[i - 1] === 'r' || source[i - 1] === 'R');
      const triple = source.startsWith(c.repeat(3), i);
      const close = triple ? c.repeat(3) : c;
      i += close.length;
      while (i < source.length && !source.startsWith(close, i)) i += !raw && source[i] === '\\' ? 2 : 1;
      i += close.length - 1;
      unary = 0;
      continue;
    }
    if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') depth = Math.max(0, depth - 1);
    if (c === '!' || c === '-') unary++;
    else if (c !== ' ' && c !== '\t' && c !== '\n' && c !== '\r') unary = 0;
    if (depth + unary > WHEN_LIMITS.maxNesting) {
      throw new Refused({ code: 'too-deep', offset: i, message: `nests deeper than ${WHEN_LIMITS.maxNesting} levels` });
    }
  }
}

/** The static type of a node, as far as it can be known: `dyn` when it cannot. */
type T = 'int' | 'uint' | 'double' | 'string' | 'bool' | 'bytes' | 'null' | 'list' | 'map' | 'timestamp' | 'duration' | 'type' | 'dyn';

const NUMERIC: ReadonlySet<T> = new Set(['int', 'uint', 'double']);
/** The fields of the structured variables, so that a misspelt one is an error at load. */
const FIELDS: Readonly<Record<string, Readonly<Record<string, T>>>> = {
  tool: { name: 'string', annotations: 'map' },
  identity: { principal: 'string', tenant: 'string', roles: 'list', claims: 'map' },
  session: { id: 'string' },
};
const VARIABLE_TYPES: Readonly<Record<WhenVariable, T>> = {
  args: 'map',
  tool: 'map',
  mode: 'string',
  chain: 'list',
  identity: 'map',
  session: 'map',
  riskTags: 'list',
  now: 'timestamp',
};
const TIME_GETTERS = [
  'getDate',
  'getDayOfMonth',
  'getDayOfWeek',
  'getDayOfYear',
  'getFullYear',
  'getHours',
  'getMilliseconds',
  'getMinutes',
  'getMonth',
  'getSeconds',
];
/** Functions and methods: [arities], the receiver's type for a method (`undefined`: any), the result. */
const FUNCTIONS: Readonly<Record<string, { arity: number[]; method?: T | 'any' | 'none'; args?: T[]; result: T }>> = {
  size: { arity: [0, 1], method: 'any', result: 'int' },
  int: { arity: [1], method: 'none', result: 'int' },
  uint: { arity: [1], method: 'none', result: 'uint' },
  double: { arity: [1], method: 'none', result: 'double' },
  string: { arity: [1], method: 'none', result: 'string' },
  bytes: { arity: [1], method: 'none', result: 'bytes' },
  bool: { arity: [1], method: 'none', result: 'bool' },
  dyn: { arity: [1], method: 'none', result: 'dyn' },
  type: { arity: [1], method: 'none', result: 'type' },
  timestamp: { arity: [1], method: 'none', result: 'timestamp' },
  duration: { arity: [1], method: 'none', args: ['string'], result: 'duration' },
  matches: { arity: [1, 2], method: 'any', result: 'bool' },
  contains: { arity: [1], method: 'string', args: ['string'], result: 'bool' },
  startsWith: { arity: [1], method: 'string', args: ['string'], result: 'bool' },
  endsWith: { arity: [1], method: 'string', args: ['string'], result: 'bool' },
  within: { arity: [2], method: 'none', args: ['string', 'string'], result: 'bool' },
  host: { arity: [1], method: 'none', args: ['string'], result: 'string' },
  glob: { arity: [2], method: 'none', args: ['string', 'string'], result: 'bool' },
  toNumber: { arity: [1], method: 'none', result: 'double' },
  ...Object.fromEntries(TIME_GETTERS.map((g) => [g, { arity: [0, 1], method: 'timestamp' as T, result: 'int' as T }])),
};

type Node = import('@bufbuild/cel-spec/cel/expr/syntax_pb.js').Expr;

interface Shape {
  nodes: number;
  comprehensionDepth: number;
  /** Elements of the largest list or map literal. */
  literal: number;
  /** `+` nodes (each can at most add one more collection's size to a concatenation). */
  plus: number;
  variables: Set<WhenVariable>;
}

function known(a: T, b: T): boolean {
  return a !== 'dyn' && b !== 'dyn';
}

function arithmetic(op: string, a: T, b: T): T | undefined {
  if (!known(a, b)) return op === '_+_' && (a === 'string' || b === 'string') ? 'string' : 'dyn';
  if (NUMERIC.has(a) && a === b) return a;
  if (op === '_+_') {
    if (a === b && (a === 'string' || a === 'bytes' || a === 'list' || a === 'duration')) return a;
    if ((a === 'timestamp' && b === 'duration') || (a === 'duration' && b === 'timestamp')) return 'timestamp';
  }
  if (op === '_-_') {
    if (a === 'timestamp' && b === 'duration') return 'timestamp';
    if (a === b && (a === 'timestamp' || a === 'duration')) return 'duration';
  }
  return undefined;
}

function comparable(a: T, b: T): boolean {
  if (!known(a, b)) return true;
  if (NUMERIC.has(a) && NUMERIC.has(b)) return true;
  return a === b && (a === 'string' || a === 'bytes' || a === 'bool' || a === 'timestamp' || a === 'duration');
}

/** Walks a parsed expression: bounds, names, types. Returns the result type; throws Refused at the first problem. */
function checkAst(root: Node, positions: Record<string, number>, shape: Shape): T {
  const at = (n: Node): number => positions[String(n.id)] ?? 0;
  const fail = (n: Node, code: WhenIssue['code'], message: string): never => {
    throw new Refused({ code, offset: at(n), message });
  };
  const need = (n: Node, t: T, want: T | T[], what: string): void => {
    const wants = Array.isArray(want) ? want : [want];
    if (t !== 'dyn' && !wants.includes(t)) fail(n, 'type', `${what} must be ${wants.join(' or ')}, not ${t}`);
  };
  const walk = (n: Node, depth: number, scope: ReadonlySet<string>, comp: number): T => {
    if (++shape.nodes > WHEN_LIMITS.maxNodes) fail(n, 'too-large', `has more than ${WHEN_LIMITS.maxNodes} parts`);
    if (depth > WHEN_LIMITS.maxNesting) fail(n, 'too-deep', `nests deeper than ${WHEN_LIMITS.maxNesting} levels`);
    const k = n.exprKind;
    switch (k.case) {
      case 'constExpr': {
        const c = k.value.constantKind.case;
        return c === 'int64Value'
          ? 'int'
          : c === 'uint64Value'
            ? 'uint'
            : c === 'doubleValue'
              ? 'double'
              : c === 'stringValue'
                ? 'string'
                : c === 'boolValue'
                  ? 'bool'
                  : c === 'bytesValue'
                    ? 'bytes'
                    : c === 'nullValue'
                      ? 'null'
                      : 'dyn';
      }
      case 'identExpr': {
        const name = k.value.name;
        if (scope.has(name)) return 'dyn';
        if ((WHEN_VARIABLES as readonly string[]).includes(name)) {
          shape.variables.add(name as WhenVariable);
          return VARIABLE_TYPES[name as WhenVariable];
        }
        return fail(n, 'unknown-variable', `unknown variable ${JSON.stringify(name)} (expected one of ${WHEN_VARIABLES.join(', ')})`);
      }
      case 'selectExpr': {
        const operand = k.value.operand as Node;
        const t = walk(operand, depth + 1, scope, comp);
        if (t !== 'dyn' && t !== 'map') fail(n, 'type', `${t} has no field ${JSON.stringify(k.value.field)}`);
        const oc = operand.exprKind;
        const base = oc.case === 'identExpr' && !scope.has(oc.value.name) ? oc.value.name : '';
        const fields = Object.hasOwn(FIELDS, base) ? FIELDS[base] : undefined;
        if (fields && !Object.hasOwn(fields, k.value.field)) {
          fail(n, 'type', `${base} has no field ${JSON.stringify(k.value.field)} (it has ${Object.keys(fields).join(', ')})`);
        }
        if (k.value.testOnly) return 'bool';
        return fields?.[k.value.field] ?? 'dyn';
      }
      case 'listExpr': {
        shape.literal = Math.max(shape.literal, k.value.elements.length);
        for (const e of k.value.elements) walk(e, depth + 1, scope, comp);
        return 'list';
      }
      case 'structExpr': {
        if (k.value.messageName !== '') fail(n, 'type', `messages (${k.value.messageName}) are not available`);
        shape.literal = Math.max(shape.literal, k.value.entries.length);
        for (const e of k.value.entries) {
          if (e.keyKind.case === 'mapKey') walk(e.keyKind.value, depth + 1, scope, comp);
          if (e.value) walk(e.value, depth + 1, scope, comp);
        }
        return 'map';
      }
      case 'comprehensionExpr': {
        const c = k.value;
        const level = comp + 1;
        if (level > WHEN_LIMITS.maxComprehensionNesting)
          fail(n, 'too-deep', `nests comprehensions (all, exists, map, filter) deeper than ${WHEN_LIMITS.maxComprehensionNesting}`);
        shape.comprehensionDepth = Math.max(shape.comprehensionDepth, level);
        need(c.iterRange as Node, walk(c.iterRange as Node, depth + 1, scope, comp), ['list', 'map'], 'the range of a comprehension');
        walk(c.accuInit as Node, depth + 1, scope, comp);
        const inner = new Set(scope);
        inner.add(c.iterVar);
        if (c.iterVar2) inner.add(c.iterVar2);
        inner.add(c.accuVar);
        walk(c.loopCondition as Node, depth + 1, inner, level);
        walk(c.loopStep as Node, depth + 1, inner, level);
        const accu = new Set(scope);
        accu.add(c.accuVar);
        return walk(c.result as Node, depth + 1, accu, comp);
      }
      case 'callExpr': {
        const fn = k.value.function;
        const target = k.value.target;
        const tt = target ? walk(target, depth + 1, scope, comp) : undefined;
        const args = k.value.args.map((a) => walk(a, depth + 1, scope, comp));
        const [a = 'dyn', b = 'dyn', c = 'dyn'] = args;
        switch (fn) {
          case '_&&_':
          case '_||_':
            need(k.value.args[0] as Node, a, 'bool', `the left side of ${fn.slice(1, -1)}`);
            need(k.value.args[1] as Node, b, 'bool', `the right side of ${fn.slice(1, -1)}`);
            return 'bool';
          case '!_':
          case '@not_strictly_false':
            need(k.value.args[0] as Node, a, 'bool', 'the operand of !');
            return 'bool';
          case '-_':
            need(k.value.args[0] as Node, a, ['int', 'double', 'duration'], 'the operand of -');
            return a;
          case '_?_:_':
            need(k.value.args[0] as Node, a, 'bool', 'the condition of ?:');
            return b === c ? b : 'dyn';
          case '_==_':
          case '_!=_':
            return 'bool';
          case '_<_':
          case '_<=_':
          case '_>_':
          case '_>=_':
            if (!comparable(a, b)) fail(n, 'type', `cannot compare ${a} with ${b}`);
            return 'bool';
          case '_+_':
            shape.plus++;
            return arithmetic(fn, a, b) ?? fail(n, 'type', `cannot add ${a} and ${b}`);
          case '_-_':
          case '_*_':
          case '_/_':
          case '_%_':
            return arithmetic(fn, a, b) ?? fail(n, 'type', `cannot apply ${fn.slice(1, -1)} to ${a} and ${b}`);
          case '_[_]':
            need(k.value.args[0] as Node, a, ['list', 'map'], 'an indexed value');
            return 'dyn';
          case '@in':
            need(k.value.args[1] as Node, b, ['list', 'map'], 'the right side of in');
            return 'bool';
        }
        const f = Object.hasOwn(FUNCTIONS, fn) ? FUNCTIONS[fn] : undefined;
        if (f === undefined) {
          return fail(
            n,
            'unknown-function',
            `unknown function ${JSON.stringify(fn)} (expected a CEL standard function or one of within, host, glob, toNumber)`,
          );
        }
        const isMethod = target !== undefined;
        if (isMethod && f.method === 'none') fail(n, 'unknown-function', `${fn} is a function, not a method: write ${fn}(...)`);
        if (!isMethod && f.method !== undefined && f.method !== 'none' && f.method !== 'any')
          fail(n, 'unknown-function', `${fn} is a method: write x.${fn}(...)`);
        if (!f.arity.includes(args.length)) fail(n, 'type', `${fn} takes ${f.arity.join(' or ')} argument(s), not ${args.length}`);
        if (isMethod && f.method !== 'any' && f.method !== 'none' && f.method !== undefined) need(target as Node, tt as T, f.method, `the receiver of ${fn}`);
        f.args?.forEach((want, i) => {
          need(k.value.args[i] as Node, args[i] as T, want, `argument ${i + 1} of ${fn}`);
        });
        if (fn === 'matches') {
          // A pattern from the call would be compiled per call; only the policy's own are accepted.
          const pattern = k.value.args[args.length - 1] as Node;
          if (pattern.exprKind.case !== 'constExpr') fail(pattern, 'type', 'the pattern of matches must be a string literal');
        }
        if (fn === 'glob') {
          const pattern = k.value.args[1] as Node;
          const pc = pattern.exprKind;
          if (pc.case === 'constExpr' && pc.value.constantKind.case === 'stringValue' && pc.value.constantKind.value.length > GLOB_MAX_PATTERN) {
            fail(pattern, 'too-large', `a glob pattern is longer than ${GLOB_MAX_PATTERN} characters`);
          }
        }
        return f.result;
      }
      default:
        return fail(n, 'syntax', 'an empty expression');
    }
  };
  return walk(root, 0, new Set(), 0);
}

/** The worst-case cost for collections of `width` elements: nodes times the range sizes of nested comprehensions. */
function cost(shape: Shape, width: number): number {
  const w = Math.max(width, shape.literal, 1) * (shape.plus + 1);
  return shape.nodes * w ** shape.comprehensionDepth;
}

/** The largest list or map among the values a condition reads (at most `limit` values are looked at). */
function widest(values: readonly unknown[], limit: number): number {
  let max = 0;
  let seen = 0;
  const stack = [...values];
  while (stack.length > 0 && seen < limit) {
    const v = stack.pop();
    seen++;
    if (Array.isArray(v)) {
      max = Math.max(max, v.length);
      for (const x of v) stack.push(x);
    } else if (typeof v === 'object' && v !== null) {
      const vals = Object.values(v);
      max = Math.max(max, vals.length);
      for (const x of vals) stack.push(x);
    } else if (typeof v === 'string') {
      // A string is iterated by nothing in CEL, but its size bounds the work of contains, matches and the like: cheap.
    }
  }
  return seen >= limit ? Number.POSITIVE_INFINITY : max;
}

/** Thrown by {@link compileWhen}: the condition's problem, located. */
export class WhenError extends Error {
  constructor(readonly issue: WhenIssue) {
    super(`line ${issue.line}, column ${issue.column}: ${issue.message}`);
  }
}

/**
 * Checks and compiles one condition; throws {@link WhenError} (located) for a problem, or
 * `missing-dependency` when @bufbuild/cel is not installed. `fastPath: false` evaluates every
 * call with the library alone (the fast path's reference, policy-cel-fast.ts).
 */
export function compileWhen(source: string, options: { fastPath?: boolean } = {}): CompiledWhen {
  const located = (e: Refused): WhenError => new WhenError({ code: e.issue.code, message: e.issue.message, ...locate(source, e.issue.offset) });
  if (source.length > WHEN_LIMITS.maxLength) {
    throw new WhenError({ code: 'too-large', line: 1, column: 1, message: `is longer than ${WHEN_LIMITS.maxLength} characters` });
  }
  try {
    scanNesting(source);
  } catch (e) {
    if (e instanceof Refused) throw located(e);
    throw e;
  }
  const { cel, env } = loadPeer();
  let parsed: ReturnType<Cel['parse']>;
  try {
    parsed = cel.parse(source);
  } catch (e) {
    if (e instanceof RangeError) throw new WhenError({ code: 'too-deep', line: 1, column: 1, message: 'nests too deep to parse' });
    const m = /^<input>:(\d+):(\d+): (.*)$/s.exec((e as Error)?.message ?? '');
    throw new WhenError({ code: 'syntax', line: Number(m?.[1] ?? 1), column: Number(m?.[2] ?? 1), message: `syntax error: ${m?.[3] ?? String(e)}` });
  }
  const shape: Shape = { nodes: 0, comprehensionDepth: 0, literal: 0, plus: 0, variables: new Set() };
  const positions: Record<string, number> = {};
  for (const [id, offset] of Object.entries(parsed.sourceInfo?.positions ?? {})) positions[id] = offset;
  let type: T;
  try {
    type = checkAst(parsed.expr, positions, shape);
  } catch (e) {
    if (e instanceof Refused) throw located(e);
    throw e;
  }
  if (type !== 'bool' && type !== 'dyn') throw new WhenError({ code: 'type', line: 1, column: 1, message: `must be true or false, not ${type}` });
  if (cost(shape, 0) > WHEN_LIMITS.maxCost) {
    throw new WhenError({ code: 'cost', line: 1, column: 1, message: `costs more than ${WHEN_LIMITS.maxCost} (${shape.nodes} parts over its literals)` });
  }
  const run = cel.plan(env, parsed);
  const fast = options.fastPath === false ? undefined : fastCondition(parsed.expr);
  const variables = shape.variables;
  const comprehends = shape.comprehensionDepth > 0;
  const names = [...variables];
  return Object.freeze({
    source,
    variables,
    evaluate(call: WhenCall): { value: boolean } | { error: string } {
      if (fast !== undefined) {
        const v = fast(call.input as unknown as Readonly<Record<string, unknown>>);
        if (v !== BAIL) return { value: v };
      }
      if (comprehends) {
        const width = widest(
          names.map((v) => call.input[v]),
          WHEN_LIMITS.maxCost,
        );
        if (cost(shape, width) > WHEN_LIMITS.maxCost) return { error: `cost limit: ranges over ${width} elements, past the limit of ${WHEN_LIMITS.maxCost}` };
      }
      try {
        const r = run(call.activation(names) as never);
        if (cel.isCelError(r)) return { error: r.message };
        if (typeof r !== 'boolean') return { error: 'did not evaluate to true or false' };
        return { value: r };
      } catch (e) {
        return { error: (e as Error)?.message ?? String(e) };
      }
    },
  });
}

/** A condition's problem as an issue of its policy document, at `path` (`/rules/3/when`). */
export function whenIssue(e: WhenError, path: string): Issue {
  return { code: e.issue.code, path, message: e.message, params: { line: e.issue.line, column: e.issue.column } };
}
