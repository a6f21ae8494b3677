// One-off, mechanical (run from the repository root: node core-specifiers.mjs): every product
// module outside src/core (src/**, examples/**; not tests, not test-support) that imports a file
// of src/core by a relative path imports 'tool-envelope/core' instead, the package's own name,
// so that Node loads one copy of the core. The imports of one file that now share that
// specifier become one import declaration (type-only names marked `type`), then Biome formats.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const CORE = 'tool-envelope/core';
const root = process.cwd();
const coreDir = path.join(root, 'src/core') + path.sep;
const files = ['src', 'examples']
  .flatMap((d) => readdirSync(path.join(root, d), { recursive: true }).map((f) => path.join(root, d, f)))
  .filter(
    (f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.endsWith('.d.ts') && !f.includes(`${path.sep}test-support${path.sep}`) && !f.startsWith(coreDir),
  );

function merge(text, file) {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const imports = sf.statements.filter(
    (s) =>
      ts.isImportDeclaration(s) &&
      ts.isStringLiteral(s.moduleSpecifier) &&
      s.moduleSpecifier.text === CORE &&
      s.importClause?.name === undefined &&
      s.importClause?.namedBindings !== undefined &&
      ts.isNamedImports(s.importClause.namedBindings),
  );
  if (imports.length < 2) return text;
  const names = new Map();
  for (const s of imports) {
    for (const e of s.importClause.namedBindings.elements) {
      const typeOnly = s.importClause.isTypeOnly || e.isTypeOnly;
      const spelled = e.propertyName ? `${e.propertyName.text} as ${e.name.text}` : e.name.text;
      names.set(spelled, (names.get(spelled) ?? true) && typeOnly);
    }
  }
  const allTypes = [...names.values()].every(Boolean);
  const list = [...names].map(([n, t]) => (t && !allTypes ? `type ${n}` : n)).join(', ');
  const merged = `import ${allTypes ? 'type ' : ''}{ ${list} } from '${CORE}';`;
  let out = text;
  for (const s of [...imports].reverse()) {
    const start = s.getStart(sf);
    let end = s.getEnd();
    if (s === imports[0]) out = out.slice(0, start) + merged + out.slice(end);
    else {
      if (out[end] === '\n') end++;
      out = out.slice(0, start) + out.slice(end);
    }
  }
  return out;
}

const changed = [];
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const rewritten = text.replace(/(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])(\.{1,2}\/[^'"]+)\2/g, (all, lead, q, spec) =>
    path.resolve(path.dirname(file), spec).startsWith(coreDir) ? `${lead}${q}${CORE}${q}` : all,
  );
  if (rewritten === text) continue;
  writeFileSync(file, merge(rewritten, file));
  changed.push(path.relative(root, file));
}
if (changed.length > 0) execFileSync('npx', ['biome', 'check', '--write', ...changed], { stdio: 'inherit' });
console.log(`${changed.length} files now import ${CORE}`);
