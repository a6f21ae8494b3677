/**
 * The built package (`npm run build`, which `npm test` runs first): the core is one
 * bundled module, and every subpath shares its classes, so `instanceof` holds
 * across `tool-envelope/core`, `tool-envelope/runtime` and the root export.
 * Runs in a child node process that resolves the package by name (its `exports` map).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './oracle.js';

function runBuilt(source: string): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, ['--input-type=module', '-e', source], { cwd: repoRoot, encoding: 'utf8', timeout: 60_000 });
}

describe('the built package', () => {
  it('is built', () => {
    expect(existsSync(path.join(repoRoot, 'dist/src/core/index.js')), 'run `npm run build` first').toBe(true);
  });

  it('shares one ToolEnvelopeError between subpaths: an error thrown by the runtime is instanceof the core class', () => {
    const r = runBuilt(`
      const core = await import('tool-envelope/core');
      const root = await import('tool-envelope');
      const { ToolRegistry } = await import('tool-envelope/runtime');
      let thrown;
      try { new ToolRegistry().register({}); } catch (e) { thrown = e; }
      process.stdout.write(JSON.stringify([
        thrown instanceof core.ToolEnvelopeError,
        thrown instanceof root.ToolEnvelopeError,
        core.ToolEnvelopeError === root.ToolEnvelopeError,
        core.isToolEnvelopeError(thrown, 'invalid-tool-definition'),
      ]));`);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual([true, true, true, true]);
  });

  it('checks and decodes with the full validators, built on first use inside the bundled core', () => {
    const r = runBuilt(`
      const { validateMcec, checkMcec, decodeDw } = await import('tool-envelope/core');
      const issues = checkMcec({ ok: 'yes', extra: 1 });
      let decodeError;
      try { decodeDw({ schema: 'durable-workflow.v2.mcp-tool-result', version: 0, status: 'error' }); } catch (e) { decodeError = e; }
      process.stdout.write(JSON.stringify({
        valid: validateMcec({ ok: true }),
        issues: issues.map((i) => i.code + ' ' + i.path).sort(),
        decode: decodeError.issues.map((i) => i.code + ' ' + i.path).sort(),
      }));`);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({
      valid: true,
      issues: ['additionalProperties /extra', 'type /ok'],
      decode: ['minimum /version', 'required /error'],
    });
  });
});
