/**
 * `--mode TOOL=MODE` and the config's `modes` name tools by name; a name no upstream lists sets
 * nothing, so the tightening it meant never happens. Checked once against the tools listed at start
 * (no extra request), each such name warned of with the nearest listed one.
 */
import type { UpstreamSpec } from '../../mcp/upstream/upstream.js';
import { suggest } from '../suggest.js';

/** A listed tool: its published name, its upstream and the upstream's own name of it. */
export interface ListedTool {
  name: string;
  upstream: string;
  upstreamTool: string;
}

function unknownName(what: string, name: string, lister: string, names: readonly string[]): string {
  const near = suggest(name, names);
  return `${what} name tool '${name}', which ${lister}${near ? ` (nearest: '${near}')` : ''}: it sets no mode`;
}

/**
 * Warnings for the gateway-wide `modes` (by published name) and each upstream's own `modes` (by
 * its tool names) that name no listed tool.
 */
export function modeNameWarnings(modes: Readonly<Record<string, unknown>>, upstreams: readonly UpstreamSpec[], listed: readonly ListedTool[]): string[] {
  const out: string[] = [];
  const published = listed.map((t) => t.name);
  for (const name of Object.keys(modes))
    if (!published.includes(name)) out.push(unknownName('the modes (--mode, the config file)', name, 'no upstream lists', published));
  for (const spec of upstreams) {
    const own = listed.filter((t) => t.upstream === spec.name).map((t) => t.upstreamTool);
    const names = Object.keys(spec.modes ?? {});
    // None listed (its tools/list failed at start, or it has none): nothing to check them against,
    // which the operator is told rather than left to think they were checked.
    if (own.length === 0) {
      if (names.length > 0)
        out.push(`the modes of upstream '${spec.name}' (${names.map((n) => `'${n}'`).join(', ')}) could not be checked: it listed no tools at start`);
      continue;
    }
    for (const name of names) {
      if (!own.includes(name)) out.push(unknownName(`the modes of upstream '${spec.name}'`, name, 'it does not list', own));
    }
  }
  return out;
}
