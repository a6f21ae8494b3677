/**
 * Where in a policy's text each schema problem is: the line and column (1-based) of the node its
 * JSON pointer names (of the key, for a key that is not allowed), found by parsing the text again
 * with positions kept. Only on the error path: a policy that loads never pays for it.
 */
import { createRequire } from 'node:module';
import type { Issue } from 'tool-envelope/core';
import type { LineCounter, Node as YamlNode } from 'yaml';

type Yaml = typeof import('yaml');

/** A JSON pointer's tokens, unescaped (`~1` is `/`, `~0` is `~`); `''` has none. */
function segments(path: string): string[] {
  return path
    .split('/')
    .slice(1)
    .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** The offset of the node at `path` (or of the nearest ancestor there is), the key's for a key not allowed. */
function offsetOf(yaml: Yaml, root: unknown, path: string, atKey: boolean): number | undefined {
  let node = root;
  let offset = yaml.isNode(root) ? root.range?.[0] : undefined;
  const segs = segments(path);
  for (const [i, seg] of segs.entries()) {
    if (yaml.isMap(node)) {
      const pair = node.items.find((p) => yaml.isScalar(p.key) && String(p.key.value) === seg);
      if (!pair) break;
      const key = pair.key as YamlNode;
      const value = pair.value as YamlNode | null;
      offset = (atKey && i === segs.length - 1) || !value?.range ? key.range?.[0] : value.range[0];
      node = value;
    } else if (yaml.isSeq(node)) {
      const item = node.items[Number(seg)] as YamlNode | undefined;
      if (!item?.range) break;
      offset = item.range[0];
      node = item;
    } else break;
  }
  return offset;
}

/** `issues` with `params.at` (`{ line, column }` in the text) added where the text locates them. */
export function locateIssues(text: string, issues: readonly Issue[]): Issue[] {
  const yaml = createRequire(import.meta.url)('yaml') as Yaml;
  const lineCounter: LineCounter = new yaml.LineCounter();
  let contents: unknown;
  try {
    contents = yaml.parseDocument(text, { lineCounter, logLevel: 'silent' }).contents;
  } catch {
    return [...issues];
  }
  return issues.map((issue) => {
    const offset = offsetOf(yaml, contents, issue.path, issue.code === 'additionalProperties');
    if (offset === undefined) return issue;
    const { line, col } = lineCounter.linePos(offset);
    return { ...issue, params: { ...issue.params, at: { line, column: col } } };
  });
}
