// After tsc: the core bundle, the guards of the subpaths that need a driver
// (scripts/peer-guards.mjs), then the CLI entry point made executable.
//
// dist/ is tsc's output, one module per source file, except for how the core is loaded:
// `tool-envelope/core` (and the root export outside Node) resolves to dist/core.js, an
// ordinary esbuild bundle of tsc's core modules into one module that imports nothing. Every
// other folder imports the core by that name too (the package's self-reference), so a process
// holds exactly one copy of the core's classes (`instanceof ToolEnvelopeError` holds across
// subpaths); tsc's own core modules in dist/src/core serve for the types (.d.ts): package.json
// `files` keeps their .js out of the tarball (nothing loads them; the bench's "tsc's modules" row
// reads them from dist/ in the repository).
// Why one module: Node 20's ES module loader costs about 1.7M instructions per module; importing
// the core's 24 modules and validating once took about 126M instructions over an empty node, the
// bundle about 54M (callgrind), for the row `core: import + first validation (fresh process)`.
import { chmodSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { inputState, writeStamp } from './build-inputs.mjs';

const dist = fileURLToPath(new URL('../dist/', import.meta.url));
if (!existsSync(`${dist}src/core/index.js`)) throw new Error('dist/src/core/index.js is missing: run tsc first');

const bundle = await build({
  entryPoints: [`${dist}src/core/index.js`],
  outfile: `${dist}core.js`,
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  sourcemap: false,
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
});
const imports = Object.values(bundle.metafile.outputs).flatMap((o) => o.imports.map((i) => i.path));
if (imports.length > 0) throw new Error(`the core bundle imports ${imports.join(', ')}: the core must stay dependency-free`);

await import('./peer-guards.mjs');
const bin = new URL('../dist/src/cli/main.js', import.meta.url);
if (existsSync(bin)) chmodSync(bin, 0o755);
// Last, so that a build that failed above leaves no stamp and `npm start` builds again.
const root = fileURLToPath(new URL('..', import.meta.url));
writeStamp(root, inputState(root));
