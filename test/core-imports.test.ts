/**
 * The core's import rules (docs/architecture.md): src/core imports nothing outside
 * itself (no other area, no package, no Node built-in), and its modules import each
 * other without cycles. Type-only imports are erased by tsc and do not count.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cycles, importSpecifiers } from './imports.js';
import { repoRoot } from './oracle.js';

const coreDir = path.join(repoRoot, 'src/core');

/** The run-time imports and re-exports of one source file: specifiers of what survives compilation. */
const runtimeImports = (file: string): string[] => importSpecifiers(file, { types: false });

const productFiles = (readdirSync(coreDir, { recursive: true }) as string[])
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.startsWith('generated'))
  .map((f) => path.join(coreDir, f));

function graph(): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const file of productFiles) {
    const deps = runtimeImports(file)
      .filter((s) => s.startsWith('.'))
      .map((s) => path.relative(coreDir, path.resolve(path.dirname(file), s.replace(/\.js$/, '.ts'))));
    g.set(path.relative(coreDir, file), deps);
  }
  return g;
}

/** Product modules outside src/core (src/**, examples/**; not tests or test-support) whose run-time imports name a file of src/core by path. */
function relativeCoreImports(): string[] {
  const found: string[] = [];
  for (const dir of ['src', 'examples']) {
    for (const f of readdirSync(path.join(repoRoot, dir), { recursive: true }) as string[]) {
      const file = path.join(repoRoot, dir, f);
      if (!f.endsWith('.ts') || f.endsWith('.test.ts') || f.endsWith('.d.ts') || f.split(path.sep).includes('test-support')) continue;
      if (!path.relative(coreDir, file).startsWith('..')) continue;
      for (const spec of runtimeImports(file)) {
        if (spec.startsWith('.') && !path.relative(coreDir, path.resolve(path.dirname(file), spec)).startsWith('..')) {
          found.push(`${path.relative(repoRoot, file)} imports ${spec}`);
        }
      }
    }
  }
  return found;
}

describe('importing the core from the other folders', () => {
  // By path it would load tsc's core modules beside dist/core.js, the bundle 'tool-envelope/core' resolves to: two copies of every class.
  it("is by the package's own name, 'tool-envelope/core', never by a path into src/core", () => {
    expect(relativeCoreImports()).toEqual([]);
  });
});

describe('src/core imports', () => {
  it('nothing outside itself: only relative imports that stay inside src/core', () => {
    const outside: string[] = [];
    for (const file of productFiles) {
      for (const spec of runtimeImports(file)) {
        const inside = spec.startsWith('.') && !path.relative(coreDir, path.resolve(path.dirname(file), spec)).startsWith('..');
        if (!inside) outside.push(`${path.relative(coreDir, file)} imports ${spec}`);
      }
    }
    expect(outside).toEqual([]);
  });

  it('has no import cycles', () => {
    // The cycle finder's own test is in test/layers.test.ts.
    expect(cycles(graph())).toEqual([]);
  });
});
