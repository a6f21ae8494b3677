/**
 * The built package (`npm run build`, which `npm test` runs first when dist/ is stale): tsc's output, except
 * that `tool-envelope/core` is dist/core.js, an esbuild bundle of tsc's core modules that
 * imports nothing, in Node and every other runtime. Every other folder imports the core by
 * that name, so a process holds one copy of the core's classes and `instanceof` holds across
 * `tool-envelope/core`, the root export and the other subpaths.
 * Runs in a child node process that resolves the package by name (its `exports` map).
 */
import { spawnSync } from 'node:child_process';
import { type Dirent, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './oracle.js';

function runBuilt(source: string): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, ['--input-type=module', '-e', source], { cwd: repoRoot, encoding: 'utf8', timeout: 60_000 });
}

/** The relative imports of modules under `dist` outside `dist/src/core` that lead into it (a second copy of the core). */
function strayCoreImports(dist: string): string[] {
  const coreModules = path.join(dist, 'src/core') + path.sep;
  const strays: string[] = [];
  for (const f of readdirSync(dist, { recursive: true }) as string[]) {
    const file = path.join(dist, f);
    if (!f.endsWith('.js') || file.startsWith(coreModules)) continue;
    for (const m of readFileSync(file, 'utf8').matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g)) {
      if (path.resolve(path.dirname(file), m[1] as string).startsWith(coreModules)) strays.push(`${f} imports ${m[1]}`);
    }
  }
  return strays;
}

describe('the built package', () => {
  it('is built', () => {
    expect(existsSync(path.join(repoRoot, 'dist/core.js')), 'run `npm run build` first').toBe(true);
  });

  it('shares one ToolEnvelopeError between subpaths: errors thrown by the runtime and the mcp subpath are instanceof the core class', () => {
    const r = runBuilt(`
      const core = await import('tool-envelope/core');
      const root = await import('tool-envelope');
      const { ToolRegistry } = await import('tool-envelope/runtime');
      const { parseGatewayConfig } = await import('tool-envelope/mcp');
      const thrown = (fn) => { try { fn(); } catch (e) { return e; } };
      const fromRuntime = thrown(() => new ToolRegistry().register({}));
      const fromMcp = thrown(() => parseGatewayConfig({ upstreams: 7 }, '/'));
      process.stdout.write(JSON.stringify([
        fromRuntime instanceof core.ToolEnvelopeError,
        fromRuntime instanceof root.ToolEnvelopeError,
        core.ToolEnvelopeError === root.ToolEnvelopeError,
        core.isToolEnvelopeError(fromRuntime, 'invalid-tool-definition'),
        fromMcp instanceof core.ToolEnvelopeError,
        core.isToolEnvelopeError(fromMcp, 'invalid-option'),
      ]));`);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual([true, true, true, true, true, true]);
  });

  it("loads the core once: no built module outside dist/src/core imports tsc's core modules by path", () => {
    expect(strayCoreImports(path.join(repoRoot, 'dist'))).toEqual([]);
    // The check sees one: a root module as tsc wrote it before the package imported its core by name.
    const scratch = mkdtempSync(path.join(tmpdir(), 'tool-envelope-strays-'));
    try {
      mkdirSync(path.join(scratch, 'src/core'), { recursive: true });
      writeFileSync(path.join(scratch, 'src/core/index.js'), 'export const x = 1;\n');
      writeFileSync(path.join(scratch, 'src/index.js'), "export * from './core/index.js';\n");
      expect(strayCoreImports(scratch)).toEqual(['src/index.js imports ./core/index.js']);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
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

  it("is tsc's output plus one bundle of the core: no loader and no extra files", () => {
    const out = path.join(repoRoot, 'dist/src/core');
    const built = (readdirSync(out, { recursive: true, withFileTypes: true }) as Dirent[])
      .filter((e) => e.isFile() && !/\.(d\.ts|js\.map)$/.test(e.name))
      .map((e) => path.relative(out, path.join(e.parentPath, e.name)));
    const sources = (readdirSync(path.join(repoRoot, 'src/core'), { recursive: true }) as string[])
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.startsWith('test-support'))
      .map((f) => f.replace(/\.ts$/, '.js'));
    expect(built.sort()).toEqual(sources.sort());
    for (const f of [...built.map((b) => path.join(out, b)), path.join(repoRoot, 'dist/core.js')]) {
      const text = readFileSync(f, 'utf8');
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

  it("behaves the same as tsc's core modules it bundles, with one error class per copy", () => {
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
    const modules = runBuilt(probe(path.join(repoRoot, 'dist/src/core/index.js')));
    expect(node.stderr).toBe('');
    expect(modules.stderr).toBe('');
    const fromNode = JSON.parse(node.stdout);
    expect(fromNode.errors.map((e: unknown[]) => e.slice(0, 2))).toEqual([
      [true, 'invalid-json'],
      [true, 'invalid-envelope'],
      [true, 'lossy-conversion'],
    ]);
    expect(fromNode.mcec.valid.valid && fromNode.dw.valid.valid && fromNode.contextos.valid.valid).toBe(true);
    expect(fromNode).toEqual(JSON.parse(modules.stdout));
  });

  // That every subpath's declarations type-check without skipLibCheck is checked by test/readme.test.ts,
  // in the one TypeScript program that also checks the README's blocks (loading the peers' types once).

  it('ships a core with no imports at all, the same file for Node and for every other runtime', () => {
    const bundle = readFileSync(path.join(repoRoot, 'dist/core.js'), 'utf8');
    expect(bundle).not.toMatch(/(^|[;}\s])import\s*[{*"'(]|\brequire\(/);
    const resolved = (conditions: string[]) =>
      spawnSync(
        process.execPath,
        [
          ...conditions,
          '--input-type=module',
          '-e',
          `const url = import.meta.resolve('tool-envelope/core'); process.stdout.write(url.slice(url.indexOf('/dist/')));`,
        ],
        { cwd: repoRoot, encoding: 'utf8' },
      ).stdout;
    expect(resolved([])).toBe('/dist/core.js');
    expect(resolved(['--conditions=browser'])).toBe('/dist/core.js');
  });
});
