// Build step after tsc: the core (`tool-envelope/core`) becomes one ESM file, so that
// importing it costs one module load instead of one per source file (the cold-start
// goal of issue #2). tsc's per-file outputs of the core are replaced by one-line
// facades that re-export from that file, so the other areas (which import
// `../core/errors.js`, `../core/model.js`, ...) and the core subpath share one copy of
// every class and value: `instanceof ToolEnvelopeError` holds across subpaths.
// Core modules nothing outside the core may import (internal helpers, the generated
// validators) are bundled only; their .d.ts files stay for the declarations.
//
// Two builds of the core:
// - index.js (the `node` condition): the generated validators (over half the code)
//   are separate CommonJS files, each `require`d on its first use, so importing the
//   core parses none of them; a first validateMcec loads the MCEC set only.
// - index.portable.js (every other runtime): one self-contained module, no imports.
import { readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
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

// Outputs of an earlier run of this script are not tsc's: start without them.
for (const e of readdirSync(coreOut)) {
  if (e.endsWith('.cjs') || e.endsWith('.cjs.map') || e.startsWith('index.portable.js')) rmSync(join(coreOut, e));
}

// The run-time exports of each module tsc emitted, read before anything is replaced.
const modules = [];
for (const file of jsFiles(coreOut)) {
  if (file === bundleFile) continue;
  const namespace = await import(pathToFileURL(file).href);
  modules.push({ file, names: Object.keys(namespace), namespace });
}
const moduleOf = (rel) => {
  const found = modules.find((m) => m.file === join(coreOut, rel));
  if (!found) throw new Error(`no tsc output ${rel}`);
  return found;
};

const common = {
  bundle: true,
  target: 'es2022',
  sourcemap: false,
  legalComments: 'none',
  // Parsing is most of the cold start: no whitespace; names kept for readable stack traces.
  minifyWhitespace: true,
  minifySyntax: true,
  metafile: true,
  logLevel: 'warning',
};
const src = join(root, 'src', 'core');
const entry = join(src, 'index.ts');

// What the Node build loads on first use, as `<name>.cjs` beside index.js. The MCEC
// validators (the default contract everywhere) stay in index.js; the other contracts'
// validators, the allErrors set behind check*(), the codecs, error classification,
// the JSON guards and the previews are parsed by the first call that needs them.
const lazyChunks = {
  'validators-fast-dw': join(src, 'generated', 'validators-fast-dw.ts'),
  'validators-fast-contextos': join(src, 'generated', 'validators-fast-contextos.ts'),
  'validators-full': join(src, 'generated', 'validators-full.ts'),
  'mcec-codec': join(src, 'mcec-codec.ts'),
  'dw-codec': join(src, 'dw-codec.ts'),
  'contextos-codec': join(src, 'contextos-codec.ts'),
  'json-safe': join(src, 'json-safe.ts'),
  preview: join(src, 'preview.ts'),
  classify: join(src, 'classify.ts'),
};
const lazyFiles = new Set(Object.values(lazyChunks));
const tscOutput = (file) => moduleOf(relative(src, file).replace(/\.ts$/, '.js'));

// A chunk is CommonJS-shaped, and every other core module it imports comes through
// its `require` from index.js (the bundle's own copies: one ToolEnvelopeError class,
// one set of loaded validators; a lazy module comes as its stubs).
const shared = new Set();
for (const [name, file] of Object.entries(lazyChunks)) {
  await build({
    ...common,
    entryPoints: [file],
    outfile: join(coreOut, `${name}.cjs`),
    format: 'cjs',
    platform: 'neutral',
    plugins: [
      {
        name: 'chunk-deps',
        setup(b) {
          b.onResolve({ filter: /^\./ }, (args) => {
            if (args.kind === 'entry-point') return undefined;
            const target = join(args.resolveDir, args.path.replace(/\.js$/, '.ts'));
            if (!target.startsWith(src)) throw new Error(`${relative(root, file)} imports ${args.path}, outside the core`);
            shared.add(target);
            return { path: 'tool-envelope:core', external: true };
          });
        },
      },
    ],
  });
}
const sharedNames = new Map();
for (const file of shared) {
  const { names, namespace } = tscOutput(file);
  for (const n of names) {
    const seen = sharedNames.get(n);
    if (seen && tscOutput(seen).namespace[n] !== namespace[n]) {
      throw new Error(`${relative(root, seen)} and ${relative(root, file)} both export ${n}: a chunk's require() could not tell them apart`);
    }
    if (!seen) sharedNames.set(n, file);
  }
}

// process.getBuiltinModule (Node >= 20.16) costs a fraction of a static `import 'node:fs'`,
// which builds an ES module facade of all of fs (3 ms on a slow core); older Nodes import.
const sharedImports = [...shared].map((file, i) => {
  const names = [...sharedNames].filter(([, f]) => f === file).map(([n]) => n);
  return { file, specifiers: names.map((n) => `${n} as m${i}_${n}`), entries: names.map((n) => `${n}: m${i}_${n}`) };
});
const loaderSource = `${sharedImports.map((m) => `import { ${m.specifiers.join(', ')} } from ${JSON.stringify(m.file)};`).join('\n')}
const builtin = globalThis.process?.getBuiltinModule;
const fs = builtin ? undefined : await import('node:fs');
const vm = builtin ? undefined : await import('node:vm');
let shared;
const require = () => (shared ??= Object.freeze({ ${sharedImports.flatMap((m) => m.entries).join(', ')} }));
export function loadChunk(name) {
  const { readFileSync } = fs ?? builtin('node:fs');
  const { compileFunction } = vm ?? builtin('node:vm');
  const url = new URL('./' + name + '.cjs', import.meta.url);
  const module = { exports: {} };
  compileFunction(readFileSync(url, 'utf8'), ['exports', 'require', 'module'], { filename: url.href })(module.exports, require, module);
  return module.exports;
}
`;
const LOADER = 'tool-envelope:chunk-loader';
function wrapperSource(name, file) {
  const { names, namespace } = tscOutput(file);
  const lines = [`import { loadChunk } from ${JSON.stringify(LOADER)};`, 'let chunk;', `const load = () => (chunk ??= loadChunk(${JSON.stringify(name)}));`];
  // What the module re-exports from another (classify.ts re-exports ToolFailure) stays that module's.
  const reexports = new Map();
  for (const [, list, from] of readFileSync(file, 'utf8').matchAll(/^export \{([^}]*)\} from '([^']+)';/gm)) {
    for (const spec of list.split(',').map((x) => x.trim()).filter((x) => x && !x.startsWith('type '))) {
      reexports.set(spec, join(dirname(file), from.replace(/\.js$/, '.ts')));
    }
  }
  for (const n of names) {
    const value = namespace[n];
    const owner = reexports.get(n);
    if (owner) {
      if (lazyFiles.has(owner)) throw new Error(`${name} re-exports ${n} from another lazy module`);
      lines.push(`export { ${n} } from ${JSON.stringify(owner)};`);
    } else if (typeof value === 'function' && !/^class\b/.test(Function.prototype.toString.call(value))) {
      lines.push(`export function ${n}(...args) { return load().${n}(...args); }`);
    } else if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) {
      lines.push(`export const ${n} = ${JSON.stringify(value)};`);
    } else {
      throw new Error(`${name} exports ${n}, which is neither a function nor a primitive: it cannot load lazily`);
    }
  }
  return lines.join('\n');
}
// validators.ts in the Node build: MCEC's set bundled, the others loaded on first use.
const validatorsSource = `import { loadChunk } from ${JSON.stringify(LOADER)};
import { mcecFast } from ${JSON.stringify(join(src, 'generated', 'validators-fast-mcec.ts'))};
const mcec = { mcecFast };
const chunks = { dw: 'validators-fast-dw', contextos: 'validators-fast-contextos' };
export function loadFastValidators(group) { return group === 'mcec' ? mcec : loadChunk(chunks[group]); }
export function loadFullValidators(limits) { return loadChunk('validators-full').createFullValidators(limits); }
`;

const nodeBuild = await build({
  ...common,
  entryPoints: [entry],
  outfile: bundleFile,
  format: 'esm',
  platform: 'node',
  plugins: [
    {
      name: 'lazy-chunks',
      setup(b) {
        b.onResolve({ filter: /^tool-envelope:chunk-loader$/ }, () => ({ path: LOADER, namespace: 'lazy' }));
        b.onLoad({ filter: /.*/, namespace: 'lazy' }, () => ({ contents: loaderSource, loader: 'js', resolveDir: src }));
        b.onLoad({ filter: /\.ts$/ }, (args) => {
          if (args.path === join(src, 'validators.ts')) return { contents: validatorsSource, loader: 'js', resolveDir: src };
          const name = Object.keys(lazyChunks).find((n) => lazyChunks[n] === args.path);
          return name ? { contents: wrapperSource(name, args.path), loader: 'js', resolveDir: src } : undefined;
        });
      },
    },
  ],
});
const portableBuild = await build({
  ...common,
  entryPoints: [entry],
  outfile: join(coreOut, 'index.portable.js'),
  format: 'esm',
  platform: 'neutral',
});
const importsOf = (result) => Object.values(result.metafile.outputs).flatMap((o) => o.imports.map((i) => i.path));
if (importsOf(portableBuild).length > 0) throw new Error(`the portable core imports ${importsOf(portableBuild).join(', ')}: the core must stay dependency-free`);
const nodeImports = importsOf(nodeBuild).filter((p) => !['node:fs', 'node:vm'].includes(p));
if (nodeImports.length > 0) throw new Error(`the core bundle imports ${nodeImports.join(', ')}: the core must stay dependency-free`);
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
