// What the build reads, as one figure to compare: the number of input files and the newest mtime
// among them. postbuild.mjs writes it to dist/.build-stamp; build-if-stale.mjs (`npm start`)
// rebuilds only when the inputs differ from the stamp, so a start after no edit costs no 15 s build.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const DIRS = ['src', 'examples', 'schemas', 'scripts', 'rules'];
const FILES = ['package.json', 'package-lock.json'];
/** The validators `npm run gen` writes: outputs of the build (typecheck rewrites them too), not inputs. */
const GENERATED = new Set([join('src', 'core', 'generated'), join('src', 'governance', 'generated')]);

/** Tests are not built (tsconfig.build.json), so editing one leaves dist/ up to date. */
function isTestOnly(name) {
  return name.endsWith('.test.ts') || name === 'test-support';
}

/** @returns {{ files: number, newest: number }} */
export function inputState(root) {
  let files = 0;
  let newest = 0;
  const see = (path) => {
    files += 1;
    newest = Math.max(newest, statSync(path).mtimeMs);
  };
  const walk = (rel) => {
    for (const entry of readdirSync(join(root, rel), { withFileTypes: true })) {
      const child = join(rel, entry.name);
      if (isTestOnly(entry.name) || GENERATED.has(child)) continue;
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile()) see(join(root, child));
    }
  };
  for (const dir of DIRS) if (existsSync(join(root, dir))) walk(dir);
  const tsconfigs = readdirSync(root).filter((n) => /^tsconfig.*\.json$/.test(n));
  for (const file of [...FILES, ...tsconfigs]) if (existsSync(join(root, file))) see(join(root, file));
  return { files, newest };
}

const stampPath = (root) => join(root, 'dist', '.build-stamp');

export function writeStamp(root, state) {
  writeFileSync(stampPath(root), `${JSON.stringify(state)}\n`);
}

/** Why dist/ must be rebuilt, or undefined when it is up to date with `state`. */
export function staleReason(root, state) {
  if (!existsSync(join(root, 'dist', 'src', 'cli', 'main.js'))) return 'no dist/ yet';
  if (!existsSync(stampPath(root))) return 'dist/ has no build stamp';
  let stamp;
  try {
    stamp = JSON.parse(readFileSync(stampPath(root), 'utf8'));
  } catch {
    return 'the build stamp is unreadable';
  }
  // A deleted or added file changes the count even when no mtime grows.
  if (stamp?.files !== state.files) return 'files were added or removed';
  if (!(state.newest <= stamp.newest)) return 'sources changed since the last build';
  return undefined;
}
