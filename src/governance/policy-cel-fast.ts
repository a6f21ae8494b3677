/**
 * A fast path for the conditions operators write most (a speed trick, bench/README.md): a checked CEL
 * expression of variables, selections, literals, comparisons, `&&`/`||`/`!`, `in` and the helpers is
 * compiled to closures. Anything it is not sure of answers BAIL and goes to @bufbuild/cel, its reference,
 * which also gives every error; policy-cel-fast.test.ts holds the two to the same values.
 */
import { glob, host, toNumber, within } from './policy-helpers.js';

type Node = import('@bufbuild/cel-spec/cel/expr/syntax_pb.js').Expr;

/** The answer "ask the library". */
export const BAIL: unique symbol = Symbol('bail');
type Value = unknown;
type Fn = (input: Readonly<Record<string, unknown>>) => Value;

/** JSON's number range where a CEL int literal and a double compare alike. */
const SAFE = 2 ** 53;
const VARIABLES: ReadonlySet<string> = new Set(['args', 'tool', 'mode', 'chain', 'identity', 'session', 'riskTags']);

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isPrimitive(v: unknown): v is string | number | boolean {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
}

/** Throws to abandon compiling an expression that is not in the subset. */
class Outside extends Error {}

function compileNode(n: Node): Fn {
  const k = n.exprKind;
  switch (k.case) {
    case 'constExpr': {
      const c = k.value.constantKind;
      if (c.case === 'stringValue' || c.case === 'boolValue' || c.case === 'doubleValue') {
        const v = c.value;
        return () => v;
      }
      if (c.case === 'int64Value' && c.value >= -SAFE && c.value <= SAFE) {
        const v = Number(c.value);
        return () => v;
      }
      throw new Outside();
    }
    case 'identExpr': {
      const name = k.value.name;
      if (!VARIABLES.has(name)) throw new Outside();
      return (input) => input[name];
    }
    case 'selectExpr': {
      const operand = compileNode(k.value.operand as Node);
      const field = k.value.field;
      // has(): as the library's maps answer it, a key holding null is absent.
      if (k.value.testOnly) {
        return (input) => {
          const o = operand(input);
          return isObject(o) ? Object.hasOwn(o, field) && o[field] != null : BAIL;
        };
      }
      return (input) => {
        const o = operand(input);
        return isObject(o) && Object.hasOwn(o, field) ? o[field] : BAIL;
      };
    }
    case 'listExpr': {
      const elements = k.value.elements.map(compileNode);
      return (input) => elements.map((e) => e(input));
    }
    case 'callExpr':
      return compileCall(k.value.function, k.value.target, k.value.args);
    default:
      throw new Outside();
  }
}

function compileCall(fn: string, target: Node | undefined, argNodes: Node[]): Fn {
  const args = argNodes.map(compileNode);
  const [a, b] = args as [Fn, Fn];
  if (target !== undefined) {
    const receiver = compileNode(target);
    const method = fn === 'startsWith' || fn === 'endsWith' || fn === 'contains' ? fn : undefined;
    if (method === undefined || args.length !== 1) throw new Outside();
    return (input) => {
      const s = receiver(input);
      const x = a(input);
      if (typeof s !== 'string' || typeof x !== 'string') return BAIL;
      return method === 'contains' ? s.includes(x) : s[method](x);
    };
  }
  switch (fn) {
    case '_&&_':
    case '_||_': {
      // `false && x` is false and `true || x` true whatever x is (an error too): CEL's commutative logic.
      const stop = fn === '_||_';
      return (input) => {
        const l = a(input);
        if (l === stop) return stop;
        if (typeof l !== 'boolean') return BAIL;
        const r = b(input);
        return typeof r === 'boolean' ? r : BAIL;
      };
    }
    case '!_':
      return (input) => {
        const v = a(input);
        return typeof v === 'boolean' ? !v : BAIL;
      };
    case '_==_':
    case '_!=_': {
      const eq = fn === '_==_';
      return (input) => {
        const l = a(input);
        const r = b(input);
        if (!isPrimitive(l) || typeof l !== typeof r) return BAIL;
        return (l === r) === eq;
      };
    }
    case '_<_':
    case '_<=_':
    case '_>_':
    case '_>=_':
      return (input) => {
        const l = a(input);
        const r = b(input);
        if (typeof l !== 'number' || typeof r !== 'number') return BAIL;
        return fn === '_<_' ? l < r : fn === '_<=_' ? l <= r : fn === '_>_' ? l > r : l >= r;
      };
    case '@in':
      return (input) => {
        const x = a(input);
        const c = b(input);
        if (!isPrimitive(x)) return BAIL;
        if (Array.isArray(c)) {
          for (const e of c) {
            if (typeof e !== typeof x) return BAIL;
            if (e === x) return true;
          }
          return false;
        }
        if (isObject(c) && typeof x === 'string') return Object.hasOwn(c, x) && c[x] != null;
        return BAIL;
      };
    case 'within':
    case 'glob':
      return (input) => {
        const s = a(input);
        const p = b(input);
        if (typeof s !== 'string' || typeof p !== 'string') return BAIL;
        try {
          return fn === 'within' ? within(s, p) : glob(s, p);
        } catch {
          return BAIL;
        }
      };
    case 'host':
      return (input) => {
        const u = a(input);
        return typeof u === 'string' ? host(u) : BAIL;
      };
    case 'toNumber':
      return (input) => {
        const v = a(input);
        if (typeof v !== 'number' && typeof v !== 'string') return BAIL;
        try {
          return toNumber(v);
        } catch {
          return BAIL;
        }
      };
    default:
      throw new Outside();
  }
}

/**
 * The fast path of a checked expression, or `undefined` when it is not in the subset. The
 * function answers true, false, or {@link BAIL} (evaluate it with the library).
 */
export function fastCondition(root: Node): ((input: Readonly<Record<string, unknown>>) => boolean | typeof BAIL) | undefined {
  let f: Fn;
  try {
    f = compileNode(root);
  } catch (e) {
    if (e instanceof Outside) return undefined;
    throw e;
  }
  return (input) => {
    const v = f(input);
    return typeof v === 'boolean' ? v : BAIL;
  };
}
