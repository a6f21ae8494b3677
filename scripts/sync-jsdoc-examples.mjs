// The JSDoc `@example` of a public entry point is a copy of a region of a type-checked file under
// examples/jsdoc/ (`//#region NAME` ... `//#endregion`, NAME being the exported symbol it shows), so an
// example cannot drift from the API it shows: `npm run typecheck` compiles the regions, and
// test/jsdoc-examples.test.ts fails when a JSDoc example differs from its region or when an
// `@example` sits on a symbol without one. `node scripts/sync-jsdoc-examples.mjs [PATH...]` writes the
// regions into the JSDoc of src/ (only the files under PATHs if given) and removes every other `@example`;
// `--check` lists what it would change and exits 1 if anything.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const EXAMPLES_DIR = path.join(ROOT, 'examples/jsdoc');
const SRC_DIR = path.join(ROOT, 'src');

/** The modules a region's symbol must be imported from: the files behind package.json's "exports". */
export const ENTRY_MODULES = [
  'tool-envelope/core',
  '../../src/index.js',
  '../../src/runtime/index.js',
  '../../src/governance/index.js',
  '../../src/store/index.js',
  '../../src/store/sqlite/index.js',
  '../../src/store/postgres/index.js',
  '../../src/mcp/index.js',
  '../../src/otel/index.js',
  '../../src/frameworks/ai-sdk/index.js',
  '../../src/frameworks/openai-agents/index.js',
  '../../src/frameworks/langchain/index.js',
];

function walk(dir, keep) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...walk(p, keep));
    else if (keep(p)) out.push(p);
  }
  return out.sort();
}

export const productFiles = () => walk(SRC_DIR, (p) => p.endsWith('.ts') && !p.endsWith('.test.ts') && !p.includes(`${path.sep}generated${path.sep}`));

/** Names imported from the entry modules by an example file. */
function entryImports(text) {
  const names = new Set();
  for (const m of text.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'([^']+)'/g)) {
    if (!ENTRY_MODULES.includes(m[2])) continue;
    for (const part of m[1].split(',')) {
      const name = part
        .replace(/^\s*type\s+/, '')
        .trim()
        .split(/\s+as\s+/)[0];
      if (name) names.add(name);
    }
  }
  return names;
}

/** Every region of examples/jsdoc/*.ts: name -> { file, line, lines (dedented), imported }. */
export function collectRegions() {
  const regions = new Map();
  const problems = [];
  for (const file of walk(EXAMPLES_DIR, (p) => p.endsWith('.ts'))) {
    const text = readFileSync(file, 'utf8');
    const imported = entryImports(text);
    const lines = text.split('\n');
    for (let i = 0; i < lines.length; i++) {
      const open = /^\s*\/\/#region\s+(\S+)\s*$/.exec(lines[i]);
      if (!open) continue;
      const name = open[1];
      const end = lines.findIndex((l, j) => j > i && /^\s*\/\/#endregion\b/.test(l));
      if (end < 0) throw new Error(`${path.relative(ROOT, file)}:${i + 1}: region ${name} has no //#endregion`);
      const body = lines.slice(i + 1, end);
      const indent = Math.min(...body.filter((l) => l.trim() !== '').map((l) => /^ */.exec(l)[0].length));
      const where = `${path.relative(ROOT, file)}:${i + 1}`;
      if (regions.has(name)) problems.push(`${where}: region ${name} is defined twice`);
      if (!imported.has(name)) problems.push(`${where}: ${name} is not imported from a public entry module, so it is not a public entry point`);
      regions.set(name, { file, where, lines: body.map((l) => l.slice(indent).trimEnd()) });
      i = end;
    }
  }
  return { regions, problems };
}

const DECLARATION =
  /^export\s+(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?:function\*?|class|const|let|interface|type|enum)\s+([A-Za-z_$][\w$]*)/;
const TAG = /^\s*\*\s*@\w/;
const EXAMPLE = /^\s*\*\s*@example\b/;

/** The JSDoc `@example` text for a region, at the given indent. */
export function exampleLines(region, indent) {
  return [`${indent} * @example`, `${indent} * \`\`\`ts`, ...region.lines.map((l) => (l === '' ? `${indent} *` : `${indent} * ${l}`)), `${indent} * \`\`\``];
}

/**
 * The text of one source file with each JSDoc's `@example` sections replaced: the region of the
 * top-level exported symbol the JSDoc documents if it has one, else nothing. Only comment lines change.
 * Returns the new text and the symbols given an example.
 */
export function syncText(text, regions) {
  const lines = text.split('\n');
  const out = [];
  const placed = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (!/^\s*\/\*\*/.test(line) || line.includes('*/')) {
      out.push(line);
      continue;
    }
    const end = lines.findIndex((l, j) => j > i && l.includes('*/'));
    if (end < 0) {
      out.push(...lines.slice(i));
      break;
    }
    const indent = /^\s*/.exec(line)[0];
    const declaration = lines.slice(end + 1).find((l) => l.trim() !== '' && !/^\s*(\/\/|@)/.test(l)) ?? '';
    const name = DECLARATION.exec(declaration)?.[1];
    const region = name !== undefined && indent === '' ? regions.get(name) : undefined;
    // The body without its @example sections.
    const body = [];
    let inExample = false;
    let fenced = false;
    for (const l of lines.slice(i + 1, end)) {
      if (EXAMPLE.test(l)) {
        inExample = true;
        fenced = false;
        continue;
      }
      if (inExample) {
        if (/^\s*\*\s*```/.test(l)) fenced = !fenced;
        if (fenced || /^\s*\*\s*```/.test(l) || !TAG.test(l)) continue;
        inExample = false;
      }
      body.push(l);
    }
    const closing = lines[end];
    if (closing.trim() !== '*/') {
      // Text on the closing line (`* text */`): left alone.
      out.push(...lines.slice(i, end + 1));
      i = end;
      continue;
    }
    // Blank lines left at the end, or doubled, by a removed example go.
    for (let k = body.length - 1; k >= 0; k--) {
      if (/^\s*\*\s*$/.test(body[k]) && (k === body.length - 1 || /^\s*\*\s*$/.test(body[k + 1]))) body.splice(k, 1);
    }
    if (region) {
      placed.push(name);
      if (body.length > 0) body.push(`${indent} *`);
      body.push(...exampleLines(region, indent));
    }
    if (body.length > 0) out.push(line, ...body, closing);
    i = end;
  }
  // A symbol with a region but no JSDoc gets one.
  const result = [];
  for (let i = 0; i < out.length; i++) {
    const name = DECLARATION.exec(out[i])?.[1];
    const region = name !== undefined ? regions.get(name) : undefined;
    if (region && !placed.includes(name) && !(i > 0 && out[i - 1].trim() === '*/')) {
      placed.push(name);
      result.push('/**', ...exampleLines(region, ''), ' */');
    }
    result.push(out[i]);
  }
  return { text: result.join('\n'), placed };
}

/** The files of src/ whose text sync would change, with the new text, and what does not line up. */
export function plan(filter = () => true) {
  const { regions, problems } = collectRegions();
  const changes = [];
  const placedAt = new Map();
  for (const file of productFiles()) {
    const text = readFileSync(file, 'utf8');
    const { text: next, placed } = syncText(text, regions);
    for (const name of placed) {
      if (placedAt.has(name)) problems.push(`${name} is declared in both ${placedAt.get(name)} and ${path.relative(ROOT, file)}`);
      placedAt.set(name, path.relative(ROOT, file));
    }
    if (next !== text && filter(file)) changes.push({ file, text: next });
  }
  for (const [name, region] of regions) if (!placedAt.has(name)) problems.push(`${region.where}: no exported declaration of ${name} in src/`);
  return { changes, problems, regions };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const check = args.includes('--check');
  const paths = args.filter((a) => a !== '--check').map((a) => path.resolve(a));
  const filter = (file) => paths.length === 0 || paths.some((p) => file === p || file.startsWith(p + path.sep));
  const { changes, problems } = plan(filter);
  for (const p of problems) console.error(p);
  const { regions } = collectRegions();
  for (const { file } of changes) {
    if (check) {
      console.log(`would change ${path.relative(ROOT, file)}`);
      continue;
    }
    // Others may edit the tree at the same time: read, change and write at once, from the text as it is now.
    writeFileSync(file, syncText(readFileSync(file, 'utf8'), regions).text);
    console.log(`wrote ${path.relative(ROOT, file)}`);
  }
  process.exit(problems.length > 0 || (check && changes.length > 0) ? 1 : 0);
}
