/**
 * The folders' import rules (docs/architecture.md, "Folders and what they may import"): every
 * product file of a folder of `src/` imports, from the other folders, only those the table
 * allows, the folders import each other without cycles, and so do the files, within a folder too
 * (the brief: no import cycles). Type-only imports count here: a
 * layer that names an upper layer's types depends on it as much as one that calls it.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cycles, importSpecifiers } from './imports.js';
import { repoRoot } from './oracle.js';

const srcDir = path.join(repoRoot, 'src');

/**
 * What each folder may import of the others, as docs/architecture.md says. `core` is imported by
 * its package name (`tool-envelope/core`), never by path (test/core-imports.test.ts), so it is
 * allowed everywhere and listed nowhere; `version` is `src/version.ts`.
 */
const ALLOWED: Record<string, readonly string[]> = {
  core: [],
  store: [],
  governance: ['store'],
  runtime: ['store', 'governance'],
  report: ['store'],
  console: ['store', 'governance', 'report'],
  mcp: ['store', 'governance', 'runtime', 'version'],
  otel: ['runtime', 'mcp'],
  frameworks: ['runtime', 'mcp'],
  observe: ['store', 'mcp', 'otel'],
  cli: ['store', 'governance', 'runtime', 'mcp', 'report', 'console', 'version', 'observe'],
};

/**
 * The parts of `src/mcp` and what each may import of the others (docs/architecture.md, "Inside
 * src/mcp"), from the bottom up: the wire both hops share, the envelope vocabulary (one file each),
 * the upstream side, the tasks extension, input and confirmation rounds, the gateway, and serving it.
 */
const MCP_VOCABULARY = ['envelope', 'reader', 'binary', 'call'] as const;
const MCP_ALLOWED: Record<string, readonly string[]> = {
  wire: [],
  envelope: ['wire'],
  reader: ['wire'],
  binary: ['wire'],
  call: ['wire'],
  upstream: ['wire', ...MCP_VOCABULARY],
  tasks: ['upstream', 'wire', ...MCP_VOCABULARY],
  rounds: ['tasks', 'upstream', 'wire', ...MCP_VOCABULARY],
  gateway: ['rounds', 'tasks', 'upstream', 'wire', ...MCP_VOCABULARY],
  serve: ['gateway', 'upstream', 'wire', ...MCP_VOCABULARY],
  'server-adapter': ['wire', ...MCP_VOCABULARY],
};
const mcpDir = path.join(srcDir, 'mcp');

/** The part of `src/mcp` a path lies in: its subfolder, or its name without `.ts` for a file at the top. */
function mcpPartOf(file: string): string {
  return path.relative(mcpDir, file).split(path.sep)[0]!.replace(/\.ts$/, '');
}

/** The folder of `src/` a path lies in: its first segment, without `.ts` for a top-level file. */
function folderOf(file: string): string {
  return path.relative(srcDir, file).split(path.sep)[0]!.replace(/\.ts$/, '');
}

function productFiles(): string[] {
  return (readdirSync(srcDir, { recursive: true }) as string[])
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.endsWith('.d.ts') && !f.split(path.sep).includes('test-support'))
    .map((f) => path.join(srcDir, f));
}

/** Folder → the other folders its product files import, each with one file that does. */
function folderGraph(): Map<string, Map<string, string>> {
  const g = new Map<string, Map<string, string>>();
  for (const file of productFiles()) {
    const from = folderOf(file);
    if (!g.has(from)) g.set(from, new Map());
    for (const spec of importSpecifiers(file, { types: true })) {
      if (!spec.startsWith('.')) continue;
      const target = path.resolve(path.dirname(file), spec);
      if (path.relative(srcDir, target).startsWith('..')) continue;
      const to = folderOf(target.replace(/\.js$/, '.ts'));
      if (to !== from && !g.get(from)!.has(to)) g.get(from)!.set(to, `${path.relative(repoRoot, file)} imports ${spec}`);
    }
  }
  return g;
}

/** File (relative to the repository) → the product files of `src/` it imports, type-only imports included. */
function fileGraph(): Map<string, string[]> {
  const files = productFiles();
  const known = new Set(files);
  const g = new Map<string, string[]>();
  for (const file of files) {
    const tos: string[] = [];
    for (const spec of importSpecifiers(file, { types: true })) {
      if (!spec.startsWith('.')) continue;
      const target = path.resolve(path.dirname(file), spec).replace(/\.js$/, '.ts');
      if (known.has(target)) tos.push(path.relative(repoRoot, target));
    }
    g.set(path.relative(repoRoot, file), tos);
  }
  return g;
}

describe('the folders of src/', () => {
  const graph = folderGraph();

  it('are all in the table of docs/architecture.md', () => {
    const unknown = [...graph.keys()].filter((f) => f !== 'index' && f !== 'version' && !(f in ALLOWED));
    expect(unknown).toEqual([]);
  });

  it('import only the folders the table allows', () => {
    const bad: string[] = [];
    for (const [from, tos] of graph) {
      if (from === 'index' || from === 'version') continue;
      for (const [to, where] of tos) if (!ALLOWED[from]?.includes(to)) bad.push(`${from} -> ${to}: ${where}`);
    }
    expect(bad).toEqual([]);
  });

  it('import each other without cycles, in the code and in the table', () => {
    expect(cycles(new Map([...graph].map(([k, v]) => [k, v.keys()])))).toEqual([]);
    expect(cycles(new Map(Object.entries(ALLOWED)))).toEqual([]);
  });

  it('hold files that import each other without cycles, within a folder too (type-only imports count)', () => {
    const files = fileGraph();
    expect(files.size).toBeGreaterThan(100);
    expect(cycles(files)).toEqual([]);
  });

  it('a cycle is seen when there is one (the check itself works)', () => {
    const g = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ]);
    expect(cycles(g)).toEqual(['a -> b -> c -> a']);
  });

  it('the table in docs/architecture.md says what ALLOWED says', () => {
    const doc = readFileSync(path.join(repoRoot, 'docs/architecture.md'), 'utf8');
    for (const [folder, allowed] of Object.entries(ALLOWED)) {
      const row = doc.split('\n').find((l) => l.startsWith(`| \`src/${folder}\` |`));
      expect(row, `a row for src/${folder}`).toBeDefined();
      const mayImport = row!.split('|').at(-2)!;
      const named = new Set([...mayImport.matchAll(/`([a-z]+)`/g)].map((m) => m[1]));
      for (const f of allowed) expect(named.has(f), `src/${folder} may import ${f}`).toBe(true);
      for (const f of Object.keys(ALLOWED))
        if (f !== 'core' && f !== folder && !allowed.includes(f)) expect(named.has(f), `src/${folder} may not import ${f}`).toBe(false);
    }
  });
});

describe('the parts of src/mcp', () => {
  /** Part → the other parts its product files import, each with one file that does (the entry point, index.ts, aside). */
  function partGraph(): Map<string, Map<string, string>> {
    const g = new Map<string, Map<string, string>>();
    for (const file of productFiles()) {
      if (path.relative(mcpDir, file).startsWith('..')) continue;
      const from = mcpPartOf(file);
      if (from === 'index') continue;
      if (!g.has(from)) g.set(from, new Map());
      for (const spec of importSpecifiers(file, { types: true })) {
        if (!spec.startsWith('.')) continue;
        const target = path.resolve(path.dirname(file), spec).replace(/\.js$/, '.ts');
        if (path.relative(mcpDir, target).startsWith('..')) continue;
        const to = mcpPartOf(target);
        if (to !== from && !g.get(from)!.has(to)) g.get(from)!.set(to, `${path.relative(repoRoot, file)} imports ${spec}`);
      }
    }
    return g;
  }
  const graph = partGraph();

  it('are all in the table', () => {
    expect([...graph.keys()].filter((p) => !(p in MCP_ALLOWED))).toEqual([]);
  });

  it('import only the parts below them (upstream/, tasks/ and rounds/ never the gateway)', () => {
    const bad: string[] = [];
    for (const [from, tos] of graph) for (const [to, where] of tos) if (!MCP_ALLOWED[from]?.includes(to)) bad.push(`${from} -> ${to}: ${where}`);
    expect(bad).toEqual([]);
  });

  it('form an order without cycles, in the code and in the table', () => {
    expect(cycles(new Map([...graph].map(([k, v]) => [k, v.keys()])))).toEqual([]);
    expect(cycles(new Map(Object.entries(MCP_ALLOWED)))).toEqual([]);
  });
});
