/**
 * The three framework examples: each runs with `npx tsx FILE` (no network, no model service),
 * prints what the agent saw and exits 0; each typechecks against the framework types installed
 * from the lockfile; docs/frameworks.md shows each verbatim.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './oracle.js';

const EXAMPLES = ['ai-sdk', 'openai-agents', 'langchain'] as const;
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

  it('typecheck against the framework types pinned in the lockfile', () => {
    const lock = JSON.parse(readFileSync(path.join(repoRoot, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> };
    for (const pkg of ['ai', '@openai/agents', '@langchain/core', 'langchain']) {
      const installed = JSON.parse(readFileSync(path.join(repoRoot, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string };
      expect(installed.version, `${pkg}: node_modules must hold the lockfile's version (run npm ci)`).toBe(lock.packages[`node_modules/${pkg}`]?.version);
    }
    const dir = mkdtempSync(path.join(tmpdir(), 'te-tsc-examples-'));
    try {
      const config = path.join(dir, 'tsconfig.json');
      writeFileSync(
        config,
        JSON.stringify({
          extends: path.join(repoRoot, 'tsconfig.json'),
          compilerOptions: { noEmit: true, typeRoots: [path.join(repoRoot, 'node_modules/@types')] },
          include: EXAMPLES.map((e) => path.join(repoRoot, 'examples/frameworks', `${e}.ts`)),
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

  it.each(EXAMPLES)('docs/frameworks.md shows %s.ts verbatim, with the package import paths', (name) => {
    const doc = readFileSync(path.join(repoRoot, 'docs/frameworks.md'), 'utf8');
    const example = readFileSync(path.join(repoRoot, 'examples/frameworks', `${name}.ts`), 'utf8');
    const body = example.slice(example.indexOf('import '));
    const published = body
      .replace(`'../../src/frameworks/${name}/index.js'`, `'tool-envelope/${name}'`)
      .replace("'../../src/runtime/index.js'", "'tool-envelope/runtime'");
    expect(doc).toContain(published.trim());
  });
});
