/**
 * The built package (`npm run build`, which `npm test` runs first): in Node it is tsc's
 * output, so every subpath shares the core's classes and `instanceof` holds across
 * `tool-envelope/core`, `tool-envelope/runtime` and the root export. Every other runtime
 * gets the portable build, an esbuild bundle of the same modules that imports nothing.
 * Runs in a child node process that resolves the package by name (its `exports` map).
 */
import { spawnSync } from 'node:child_process';
import { type Dirent, existsSync, readdirSync, readFileSync } from 'node:fs';
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

  it('checks and decodes with the full validators, built on first use', () => {
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

  it("is tsc's output in Node: one module per core source file, no loader and no extra files", () => {
    const out = path.join(repoRoot, 'dist/src/core');
    const built = (readdirSync(out, { recursive: true, withFileTypes: true }) as Dirent[])
      .filter((e) => e.isFile() && !/\.(d\.ts|js\.map)$/.test(e.name) && !e.name.startsWith('index.portable.js'))
      .map((e) => path.relative(out, path.join(e.parentPath, e.name)));
    const sources = (readdirSync(path.join(repoRoot, 'src/core'), { recursive: true }) as string[])
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.startsWith('test-support'))
      .map((f) => f.replace(/\.ts$/, '.js'));
    expect(built.sort()).toEqual(sources.sort());
    for (const f of built) {
      const text = readFileSync(path.join(out, f), 'utf8');
      expect(text, f).not.toMatch(/getBuiltinModule|compileFunction|\bnew Function\b|\beval\(|\brequire\(/);
    }
  });

  it('reads its version from its own package.json, from any working directory', () => {
    const r = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `
      const { PACKAGE_VERSION } = await import(${JSON.stringify(path.join(repoRoot, 'dist/src/version.js'))});
      process.stdout.write(PACKAGE_VERSION);`,
      ],
      { cwd: '/', encoding: 'utf8' },
    );
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')).version);
  });

  it('behaves the same in the Node build and the portable build, with one error class per build', () => {
    const probe = (specifier: string) => `
      const core = await import(${JSON.stringify(specifier)});
      const thrown = (fn) => { try { fn(); return 'no error'; } catch (e) { return [e instanceof core.ToolEnvelopeError, e.code, e.message]; } };
      const outcome = core.failure(core.toolError('timeout', 'slow', 'Took too long.'), { result: { rows: [1, 2, 3] }, runId: 'r1' });
      const out = { exports: Object.keys(core).sort().map((k) => k + ':' + typeof core[k]) };
      for (const c of ['mcec', 'dw', 'contextos']) {
        const losses = [];
        const doc = core.encode(outcome, c, { losses });
        out[c] = { doc, losses, valid: core.validateEnvelope(doc, 'auto'), back: core.decode(doc), text: core.stringifyEnvelope(outcome, c) };
      }
      out.convert = core.convert(out.mcec.doc, { to: 'dw' });
      out.checks = [core.checkMcec({ ok: 'x' }), core.checkDw({ version: 0 }), core.checkContextos({})];
      out.errors = [thrown(() => core.parseJson('{"a":')), thrown(() => core.decodeMcec({ ok: 1 })), thrown(() => core.convert(out.contextos.doc, { to: 'mcec', strict: true }))];
      out.classify = [core.classifyThrown(Object.assign(new Error('ENOENT: open /home/me/x'), { code: 'ENOENT' })), core.classifyThrown(new core.ToolFailure({ category: 'focus', code: 'f', detail: 'd' }))];
      out.safe = core.toJsonSafe({ a: 1n, b: [undefined] });
      out.preview = [core.createPreview({ s: 'é'.repeat(50) }, 17), core.truncateUtf8('😀😀😀', 5)];
      out.constants = [core.DEFAULT_MAX_DEPTH, core.DW_SCHEMA_ID, core.LIBRARY_ERROR_CODES.length];
      process.stdout.write(JSON.stringify(out));`;
    const node = runBuilt(probe('tool-envelope/core'));
    const portable = runBuilt(probe(path.join(repoRoot, 'dist/src/core/index.portable.js')));
    expect(node.stderr).toBe('');
    expect(portable.stderr).toBe('');
    const fromNode = JSON.parse(node.stdout);
    expect(fromNode.errors.map((e: unknown[]) => e.slice(0, 2))).toEqual([
      [true, 'invalid-json'],
      [true, 'invalid-envelope'],
      [true, 'lossy-conversion'],
    ]);
    expect(fromNode.mcec.valid.valid && fromNode.dw.valid.valid && fromNode.contextos.valid.valid).toBe(true);
    expect(fromNode).toEqual(JSON.parse(portable.stdout));
  });

  it('ships a portable core with no imports at all; Node itself always resolves the core to the Node build', () => {
    const portable = readFileSync(path.join(repoRoot, 'dist/src/core/index.portable.js'), 'utf8');
    expect(portable).not.toMatch(/(^|[;}\s])import\s*[{*"'(]|\brequire\(/);
    const r = spawnSync(
      process.execPath,
      [
        '--conditions=browser',
        '--input-type=module',
        '-e',
        `
      const url = import.meta.resolve('tool-envelope/core');
      process.stdout.write(url.slice(url.lastIndexOf('/') + 1));`,
      ],
      { cwd: repoRoot, encoding: 'utf8' },
    );
    expect(r.stdout).toBe('index.js');
  });
});
