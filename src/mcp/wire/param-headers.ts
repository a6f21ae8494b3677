/**
 * SEP-2243 `Mcp-Param-*` headers (2026-07-28): a request whose headers and body disagree MUST be
 * refused (`-32020`, HTTP 400). The gateway checks its clients' and sends them to modern upstreams; the
 * rules are the SDK's, restated because it does not export its helpers.
 */

/** One `x-mcp-header` declaration: where the argument is, the header's name and the property's type. */
export interface ParamHeader {
  path: string[];
  name: string;
  type: string | undefined;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const TYPES = new Set(['string', 'integer', 'boolean', 'number']);
/** Where a declaration is not statically reachable through `properties`: one there makes the schema invalid. */
const UNREACHABLE = [
  'items',
  'prefixItems',
  'contains',
  'additionalProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'propertyNames',
  'patternProperties',
  'dependentSchemas',
  'oneOf',
  'anyOf',
  'allOf',
  'not',
  'if',
  'then',
  'else',
  '$defs',
  'definitions',
];
const BY_NAME = new Set(['patternProperties', 'dependentSchemas', '$defs', 'definitions']);
const PREFIX = '=?base64?';
const SUFFIX = '?=';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const DECIMAL = /^-?\d+(\.\d+)?$/;

const scanned = new WeakMap<object, ParamHeader[]>();

/**
 * The `x-mcp-header` declarations of a tool's `inputSchema` (cached per schema object). A schema
 * that breaks the rules (a declaration under `items` or `anyOf`, on a non-primitive, a name that is
 * not an HTTP token, two names equal but for case) declares none, as for the SDK's server, which
 * checks only valid ones (a `number`-typed declaration, invalid for clients, is still checked).
 */
export function paramHeadersOf(inputSchema: unknown): ParamHeader[] {
  if (typeof inputSchema !== 'object' || inputSchema === null) return [];
  let found = scanned.get(inputSchema);
  if (found === undefined) {
    found = scan(inputSchema);
    scanned.set(inputSchema, found);
  }
  return found;
}

function scan(schema: object): ParamHeader[] {
  const out: ParamHeader[] = [];
  const seen = new Set<string>();
  const visit = (node: unknown, path: string[], reachable: boolean): boolean => {
    if (typeof node !== 'object' || node === null) return true;
    const s = node as Record<string, unknown>;
    if ('x-mcp-header' in s) {
      const name = s['x-mcp-header'];
      const type = typeof s.type === 'string' ? s.type : undefined;
      if (!reachable || path.length === 0 || typeof name !== 'string' || !TOKEN.test(name)) return false;
      if (type === undefined || !TYPES.has(type) || seen.has(name.toLowerCase())) return false;
      seen.add(name.toLowerCase());
      out.push({ path, name, type });
    }
    if (typeof s.properties === 'object' && s.properties !== null) {
      for (const [key, child] of Object.entries(s.properties)) if (!visit(child, [...path, key], reachable)) return false;
    }
    for (const k of UNREACHABLE) {
      const sub = s[k];
      if (sub === undefined) continue;
      const branches = Array.isArray(sub) ? sub : BY_NAME.has(k) && typeof sub === 'object' && sub !== null ? Object.values(sub) : [sub];
      for (const b of branches) if (!visit(b, [...path, `<${k}>`], false)) return false;
    }
    return true;
  };
  return visit(schema, [], true) ? out : [];
}

function valueAt(args: unknown, path: string[]): unknown {
  let node = args;
  for (const key of path) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

/** An argument as its header text: strings as they are, numbers in decimal, booleans lowercase; else none. */
function asText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value !== 'number' || !Number.isFinite(value) || (Number.isInteger(value) && !Number.isSafeInteger(value))) return undefined;
  return String(value);
}

function decode(value: string): string | undefined {
  if (!(value.startsWith(PREFIX) && value.endsWith(SUFFIX))) return value;
  const b64 = value.slice(PREFIX.length, value.length - SUFFIX.length);
  if (!BASE64.test(b64)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(b64, 'base64'));
  } catch {
    return undefined;
  }
}

/**
 * Why a request's `Mcp-Param-*` headers disagree with its `arguments` (the `-32020` message and
 * data), or `undefined` when they agree. An argument that is present needs its header, equal once
 * decoded (numerically for `integer` and `number`); an absent or `null` one needs none.
 */
export function paramHeaderMismatch(
  declared: ParamHeader[],
  args: unknown,
  header: (name: string) => string | undefined,
): { message: string; data: { mismatch: { header: string; body: string } } } | undefined {
  for (const d of declared) {
    const body = valueAt(args, d.path);
    const text = body === undefined || body === null ? undefined : asText(body);
    if (text === undefined) continue;
    const name = `Mcp-Param-${d.name}`;
    const field = (): string => `${d.path.join('.')}=${JSON.stringify(body)}`;
    const sent = header(name);
    let why: string | undefined;
    if (sent === undefined) why = `the body carries ${field()} but the ${name} header is absent`;
    else {
      const decoded = decode(sent);
      if (decoded === undefined) why = `the ${name} header carries an invalid Base64 sentinel value`;
      else {
        const numeric = (d.type === 'integer' || d.type === 'number') && typeof body === 'number' && DECIMAL.test(decoded);
        if (numeric ? Number(decoded) !== body : decoded !== text)
          why = `the ${name} header decodes to ${JSON.stringify(decoded)} but the body carries ${field()}`;
      }
    }
    if (why) return { message: `Bad Request: the request headers and body disagree: ${why}`, data: { mismatch: { header: name, body: why } } };
  }
  return undefined;
}

/** Whether a header value must travel as Base64: not plain visible ASCII, padded, empty, or looking like the sentinel. */
function needsBase64(s: string): boolean {
  if (s.length === 0 || s !== s.trim() || (s.startsWith(PREFIX) && s.endsWith(SUFFIX))) return true;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c !== 9 && (c < 32 || c > 126)) return true;
  }
  return false;
}

/**
 * The `Mcp-Param-*` headers a client sends with a `tools/call` carrying `args` (a declaration whose
 * argument is absent, `null` or not a primitive gets none).
 */
export function paramHeadersFor(declared: ParamHeader[], args: unknown): Record<string, string> | undefined {
  let out: Record<string, string> | undefined;
  for (const d of declared) {
    const raw = valueAt(args, d.path);
    const text = raw === undefined || raw === null ? undefined : asText(raw);
    if (text === undefined) continue;
    (out ??= {})[`Mcp-Param-${d.name}`] = needsBase64(text) ? `${PREFIX}${Buffer.from(text, 'utf8').toString('base64')}${SUFFIX}` : text;
  }
  return out;
}

/**
 * The `Mcp-Param-*` headers of a `tools/call` of `tool` with `params` toward a URL upstream: what a
 * 2026-07-28 server requires with the arguments the tool marks (a 2025 one ignores them).
 */
export function paramHeadersToward(tool: { inputSchema?: unknown }, params: Record<string, unknown> | undefined): Record<string, string> | undefined {
  const declared = paramHeadersOf(tool.inputSchema);
  return declared.length === 0 ? undefined : paramHeadersFor(declared, params?.arguments);
}
