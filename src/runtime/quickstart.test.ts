// The 30-second example in docs/runtime.md must run and produce valid envelopes.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { quickstart } from '../../examples/quickstart-tool.js';
import { oracleValidate, repoRoot } from '../../test/oracle.js';

describe('examples/quickstart-tool.ts', () => {
  it('runs, and every envelope it prints is valid', async () => {
    const out = await quickstart();
    expect(out.mcec).toEqual({
      ok: true,
      result: { id: 'welcome', text: 'Hello from tool-envelope.' },
      warnings: [{ code: 'long-note', detail: 'The note is longer than 20 characters.' }],
    });
    expect(oracleValidate('mcec', out.mcec).valid).toBe(true);
    expect(out.dw).toMatchObject({
      status: 'error',
      error: { code: 'note-not-found', message: 'No note "nope".', remediation: 'List the notes first.', retryable: true },
    });
    expect(oracleValidate('dw', out.dw).valid).toBe(true);
    expect(out.contextos).toMatchObject({ status: 'error', capability_id: 'notes.read' });
    expect(out.contextos.error).toContain('Invalid arguments: /id');
    expect(oracleValidate('contextos-result', out.contextos).valid).toBe(true);
    expect(out.tools[0]).toMatchObject({ name: 'notes.read', approvalMode: 'read_only', inputSchema: { type: 'object', required: ['id'] } });
  });

  it('is the example shown at the top of docs/runtime.md', () => {
    const doc = readFileSync(path.join(repoRoot, 'docs/runtime.md'), 'utf8');
    const example = readFileSync(path.join(repoRoot, 'examples/quickstart-tool.ts'), 'utf8');
    const block = /```ts\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(block).toBeDefined();
    // The doc shows the example verbatim, with the package's import paths.
    const asPublished = example.replace("'../src/core/index.js'", "'tool-envelope/core'").replace("'../src/runtime/index.js'", "'tool-envelope/runtime'");
    expect(asPublished).toContain(block!.trim());
  });
});
