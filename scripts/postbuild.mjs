// After tsc: the portable core, the guards of the subpaths that need a driver
// (scripts/peer-guards.mjs), then the CLI entry point made executable.
//
// dist/ is tsc's output, one module per source file; Node loads the core from it like
// any other area, so there is one copy of every class (`instanceof ToolEnvelopeError`
// holds across subpaths). Runtimes without the `node` export condition (browsers,
// workers, Deno or Bun without it) get dist/src/core/index.portable.js: an ordinary
// esbuild bundle of those same tsc modules into one file that imports nothing.
import { chmodSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const coreOut = fileURLToPath(new URL('../dist/src/core/', import.meta.url));
if (!existsSync(`${coreOut}index.js`)) throw new Error('dist/src/core/index.js is missing: run tsc first');

const portable = await build({
  entryPoints: [`${coreOut}index.js`],
  outfile: `${coreOut}index.portable.js`,
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  sourcemap: false,
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
});
const imports = Object.values(portable.metafile.outputs).flatMap((o) => o.imports.map((i) => i.path));
if (imports.length > 0) throw new Error(`the portable core imports ${imports.join(', ')}: the core must stay dependency-free`);

await import('./peer-guards.mjs');
const bin = new URL('../dist/src/cli/main.js', import.meta.url);
if (existsSync(bin)) chmodSync(bin, 0o755);
