// Runs a thread entry of src/store/sqlite from its TypeScript source (the tests run the sources;
// the built package never comes here, it starts the compiled .js entry directly). Node 20 cannot
// load .ts, and tsx's loader costs ~0.5 s of CPU per thread, so the entry is bundled by esbuild
// (a dev dependency) into node_modules/.cache, once per version of the store's sources (their
// content hash), and imported from there; better-sqlite3 stays an import of the bundle.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { workerData } from 'node:worker_threads';

const entry = fileURLToPath(workerData.entry);
const storeDir = fileURLToPath(new URL('../../', import.meta.url));
const repo = fileURLToPath(new URL('../../../../', import.meta.url));

// Everything a thread entry may import lives in src/store (it imports no other folder).
const hash = createHash('sha256').update(entry);
for (const f of readdirSync(storeDir, { recursive: true }).map(String).sort()) {
  if (f.endsWith('.ts') && !f.endsWith('.test.ts')) hash.update(f).update(readFileSync(path.join(storeDir, f)));
}
const cache = path.join(repo, 'node_modules/.cache/tool-envelope-threads');
const out = path.join(cache, `${path.basename(entry, '.ts')}-${hash.digest('hex').slice(0, 16)}.mjs`);
if (!existsSync(out)) {
  const { buildSync } = await import('esbuild');
  mkdirSync(cache, { recursive: true });
  // Written aside, then renamed: processes starting at once never import a half-written file.
  const tmp = `${out}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  const result = buildSync({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    outfile: tmp,
    metafile: true,
    logLevel: 'error',
  });
  const outside = Object.keys(result.metafile.inputs).filter((i) => !path.resolve(repo, i).startsWith(storeDir));
  if (outside.length > 0) throw new Error(`a thread entry of src/store imports outside src/store (${outside.join(', ')}): extend ts-thread.mjs's hash`);
  renameSync(tmp, out);
}
await import(pathToFileURL(out).href);
