// Build step after tsc: the core (`tool-envelope/core`) becomes one ESM file, so that
// importing it costs one module load instead of one per source file (the cold-start
// goal of issue #2). tsc's per-file outputs of the core are replaced by one-line
// facades that re-export from that file, so the other areas (which import
// `../core/errors.js`, `../core/model.js`, ...) and the core subpath share one copy of
// every class and value: `instanceof ToolEnvelopeError` holds across subpaths.
// Core modules nothing outside the core may import (internal helpers, the generated
// validators) are bundled only; their .d.ts files stay for the declarations.
import { readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { join, relative, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const coreOut = join(root, 'dist', 'src', 'core');
const bundleFile = join(coreOut, 'index.js');

function jsFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? jsFiles(join(dir, e.name)) : e.name.endsWith('.js') ? [join(dir, e.name)] : [],
  );
}

if (!existsSync(bundleFile)) throw new Error('dist/src/core/index.js is missing: run tsc first');

// The run-time export names of each module tsc emitted, read before anything is replaced.
const modules = [];
for (const file of jsFiles(coreOut)) {
  if (file === bundleFile) continue;
  modules.push({ file, names: Object.keys(await import(pathToFileURL(file).href)) });
}

const result = await build({
  entryPoints: [join(root, 'src', 'core', 'index.ts')],
  outfile: bundleFile,
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  sourcemap: true,
  legalComments: 'none',
  // Parsing is most of the cold start: no whitespace; names kept for readable stack traces.
  minifyWhitespace: true,
  minifySyntax: true,
  metafile: true,
  logLevel: 'warning',
});
const imports = Object.values(result.metafile.outputs).flatMap((o) => o.imports);
if (imports.length > 0) throw new Error(`the core bundle imports ${imports.map((i) => i.path).join(', ')}: the core must stay dependency-free`);
const exported = new Set(Object.keys(await import(pathToFileURL(bundleFile).href)));

let facades = 0;
for (const { file, names } of modules) {
  const internal = names.some((n) => !exported.has(n));
  rmSync(`${file}.map`, { force: true });
  if (internal) {
    rmSync(file);
    continue;
  }
  let spec = relative(dirname(file), bundleFile).split('\\').join('/');
  if (!spec.startsWith('.')) spec = `./${spec}`;
  const body = names.length > 0 ? `export { ${names.join(', ')} } from '${spec}';\n` : `export {};\n`;
  writeFileSync(file, `// Facade: the core is bundled into ${spec} (scripts/bundle-core.mjs).\n${body}`);
  facades++;
}
console.log(`core bundled into dist/src/core/index.js; ${facades} facades, ${modules.length - facades} internal modules folded in`);
