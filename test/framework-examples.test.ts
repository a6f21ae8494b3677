/**
 * The three framework examples: each runs with `npx tsx FILE` (no network, no model service),
 * prints what the agent saw and exits 0; each typechecks against the framework types installed
 * from the lockfile; docs/frameworks.md shows each verbatim, with the tools they share (notes.ts),
 * and every ts block of docs/frameworks.md typechecks as a reader would paste it (package imports).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './oracle.js';

const EXAMPLES = ['ai-sdk', 'openai-agents', 'langchain'] as const;
/** What docs/frameworks.md shows verbatim: the examples and the tools they share. */
const SHOWN = [...EXAMPLES, 'notes'] as const;
const DOC = path.join(repoRoot, 'docs/frameworks.md');

/** The ts blocks of docs/frameworks.md; the one defining the shared tools is the `./notes.js` the others import. */
function docTsBlocks(): { name: string; text: string }[] {
  return [...readFileSync(DOC, 'utf8').matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m, i) => ({
    name: /^export const readNote\b/m.test(m[1]!) ? 'notes' : `block-${i}`,
    text: m[1]!,
  }));
}

/** How a reader imports each module an example takes from the sources. */
const PACKAGE_PATHS: Record<string, string> = {
  'tool-envelope/core': 'src/core/index.ts',
  'tool-envelope/runtime': 'src/runtime/index.ts',
  'tool-envelope/ai-sdk': 'src/frameworks/ai-sdk/index.ts',
  'tool-envelope/openai-agents': 'src/frameworks/openai-agents/index.ts',
  'tool-envelope/langchain': 'src/frameworks/langchain/index.ts',
};
const tsx = path.join(repoRoot, 'node_modules/tsx/dist/cli.mjs');

function runExample(name: string): { status: number | null; lines: unknown[]; stderr: string } {
  const r = spawnSync(process.execPath, [tsx, path.join(repoRoot, 'examples/frameworks', `${name}.ts`)], { cwd: repoRoot, encoding: 'utf8', timeout: 90_000 });
  return {
    status: r.status,
    stderr: r.stderr,
    lines: r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as unknown),
  };
}

describe('examples/frameworks', () => {
  it('ai-sdk.ts: the model saw error-json for the missing note, then json for the approved delete', () => {
    const r = runExample('ai-sdk');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.lines).toEqual([
      {
        type: 'tool-result',
        toolCallId: 'c1',
        toolName: 'notes_read',
        output: { type: 'error-json', value: expect.objectContaining({ category: 'no-target', code: 'note-not-found', retryable: true }) },
      },
      { type: 'tool-result', toolCallId: 'c2', toolName: 'notes_delete', output: { type: 'json', value: { deleted: 'todo' } } },
    ]);
  });

  it('openai-agents.ts: the model saw the failure as text from the envelope, then the approved result', () => {
    const r = runExample('openai-agents');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.lines).toMatchObject([
      {
        type: 'function_call_result',
        callId: 'c1',
        output: { type: 'text', text: expect.stringMatching(/^Tool error \[no-target\/note-not-found\]: No note "todo"\. Retryable: yes\./) },
      },
      { type: 'function_call_result', callId: 'c2', output: { type: 'text', text: '{"deleted":"todo"}' } },
    ]);
  });

  it('langchain.ts: error, paused, then the approved ToolMessage, each with its envelope', () => {
    const r = runExample('langchain');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.lines).toMatchObject([
      { tool_call_id: 'c1', status: 'error', artifact: { ok: false, error: { category: 'no-target', code: 'note-not-found' } } },
      { tool_call_id: 'c2', status: 'error', artifact: { ok: false, error: { category: 'elevation', code: 'approval-required' } } },
      { tool_call_id: 'c2', status: 'success', content: '{"deleted":"todo"}', artifact: { ok: true, result: { deleted: 'todo' } } },
    ]);
  });

  it('typecheck against the framework types pinned in the lockfile, and so does every ts block of docs/frameworks.md', () => {
    const lock = JSON.parse(readFileSync(path.join(repoRoot, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> };
    for (const pkg of ['ai', '@openai/agents', '@langchain/core', 'langchain']) {
      const installed = JSON.parse(readFileSync(path.join(repoRoot, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string };
      expect(installed.version, `${pkg}: node_modules must hold the lockfile's version (run npm ci)`).toBe(lock.packages[`node_modules/${pkg}`]?.version);
    }
    // Inside the repository, so that the blocks' bare imports (ai, zod, ...) resolve to its node_modules.
    const dir = path.join(repoRoot, '.tool-envelope', `frameworks-doc-ts-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    try {
      const blocks = docTsBlocks();
      expect(blocks.map((b) => b.name)).toContain('notes');
      for (const b of blocks) writeFileSync(path.join(dir, `${b.name}.ts`), b.text);
      const config = path.join(dir, 'tsconfig.json');
      writeFileSync(
        config,
        JSON.stringify({
          extends: path.join(repoRoot, 'tsconfig.json'),
          compilerOptions: {
            noEmit: true,
            typeRoots: [path.join(repoRoot, 'node_modules/@types')],
            paths: Object.fromEntries(Object.entries(PACKAGE_PATHS).map(([name, file]) => [name, [path.join(repoRoot, file)]])),
          },
          include: [...EXAMPLES.map((e) => path.join(repoRoot, 'examples/frameworks', `${e}.ts`)), ...blocks.map((b) => path.join(dir, `${b.name}.ts`))],
        }),
      );
      const r = spawnSync(process.execPath, [path.join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', config], {
        cwd: repoRoot,
        encoding: 'utf8',
        timeout: 180_000,
      });
      expect(r.stdout + r.stderr).toBe('');
      expect(r.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 200_000);

  it.each(SHOWN)('docs/frameworks.md shows %s.ts verbatim, with the package import paths', (name) => {
    const doc = readFileSync(DOC, 'utf8');
    const example = readFileSync(path.join(repoRoot, 'examples/frameworks', `${name}.ts`), 'utf8');
    // From the first import statement: an `import` inside the header's JSDoc example is not one.
    const body = example.slice(example.search(/^import /m));
    const published = body
      .replace(`'../../src/frameworks/${name}/index.js'`, `'tool-envelope/${name}'`)
      .replace("'../../src/runtime/index.js'", "'tool-envelope/runtime'");
    expect(doc).toContain(published.trim());
  });
});
