/**
 * How deep YAML text nests, measured on the parser's token tree before any document is built: the
 * `yaml` library builds documents recursively, so a few thousand nested `[` exhaust the stack (it
 * reports that as a syntax error); its token parser keeps its own stack, and this walk does too, so
 * text nesting past a bound is refused as too deep whatever its depth.
 */
import { createRequire } from 'node:module';
import { pointer, ToolEnvelopeError } from 'tool-envelope/core';
import type { CST } from 'yaml';

/** Where the text nests deeper than its bound: the JSON pointer and 1-based line and column there. */
export interface YamlTooDeep {
  path: string;
  line: number;
  column: number;
}

/** A map key as written: a plain or quoted scalar's text (quotes off, escapes kept), else `?`. */
function keyText(token: CST.Token | undefined): string {
  if (token === undefined) return '?';
  if (token.type === 'scalar') return token.source;
  if (token.type === 'single-quoted-scalar' || token.type === 'double-quoted-scalar') return token.source.slice(1, -1);
  return '?';
}

function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    start = i + 1;
  }
  return { line, column: offset - start + 1 };
}

/**
 * The first collection of `text` (in document order) nested inside more than `bound` collections,
 * reported at its ancestor `limit` levels down (where a depth limit of `limit` is first broken), or
 * `undefined` when none is. The text need not be valid YAML: what does not parse is left to the parser.
 */
export function yamlNestingBeyond(text: string, bound: number, limit = bound): YamlTooDeep | undefined {
  const { Parser } = createRequire(import.meta.url)('yaml') as typeof import('yaml');
  // Each entry: a token, how many collections enclose it, its path, the offsets of those collections.
  type Entry = { token: CST.Token | undefined; depth: number; path: (string | number)[]; offsets: number[] };
  const stack: Entry[] = [];
  for (const doc of new Parser().parse(text)) {
    if (doc.type === 'document') stack.push({ token: doc.value, depth: 0, path: [], offsets: [] });
    while (stack.length > 0) {
      const { token, depth, path, offsets } = stack.pop() as Entry;
      if (token === undefined) continue;
      if (token.type !== 'block-map' && token.type !== 'block-seq' && token.type !== 'flow-collection') continue;
      const at = [...offsets, token.offset];
      if (depth + 1 > bound) {
        const cut = Math.min(limit, at.length - 1);
        return { path: pointer(path.slice(0, cut)), ...lineColumn(text, at[cut] as number) };
      }
      const isSeq = token.type === 'block-seq' || (token.type === 'flow-collection' && token.start.source === '[');
      // Pushed in reverse so that the walk goes in document order.
      for (let i = token.items.length - 1; i >= 0; i--) {
        const item = token.items[i] as CST.CollectionItem;
        const name = isSeq && item.sep === undefined ? i : keyText(item.key ?? undefined);
        stack.push({ token: item.value ?? undefined, depth: depth + 1, path: [...path, name], offsets: at });
        if (item.key) stack.push({ token: item.key, depth: depth + 1, path: [...path, name], offsets: at });
      }
    }
  }
  return undefined;
}

/** The nesting a YAML file other than a policy (a gateway config, a tokens file, a rule file) may have. */
export const FILE_YAML_DEPTH = 64;

/**
 * `text` parsed as YAML, refused as `too-deep` (with where) when it nests deeper than `bound`, so
 * that no depth reaches the parser's recursion: a few thousand `[` were a stack overflow, reported
 * as a syntax error.
 */
export function parseYamlWithin(text: string, bound = FILE_YAML_DEPTH): unknown {
  const deep = yamlNestingBeyond(text, bound);
  if (deep) {
    throw new ToolEnvelopeError('too-deep', `line ${deep.line}, column ${deep.column}: ${deep.path || '/'} nests deeper than ${bound} levels`);
  }
  return (createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse(text);
}
