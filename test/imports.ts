/**
 * The module specifiers a source file imports, read from its syntax tree with the TypeScript
 * compiler, and the cycles of a graph of them: for the import-rule tests (test/core-imports.test.ts,
 * test/layers.test.ts).
 */
import { readFileSync } from 'node:fs';
import ts from 'typescript';

/**
 * Every specifier `file` imports or re-exports, dynamic `import()` included. With
 * `types: false`, only what survives compilation: type-only imports and exports (erased by tsc)
 * and `import('x').T` types are left out. With `types: true`, those count too.
 *
 * @example
 * ```ts
 * importSpecifiers('src/store/stats.ts', { types: true }); // ['./types.js', ...]
 * ```
 */
export function importSpecifiers(file: string, { types }: { types: boolean }): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, false);
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      if (types || !importIsTypeOnly(node)) out.push(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)) {
      if (types || !exportIsTypeOnly(node)) out.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments;
      if (arg && ts.isStringLiteral(arg)) out.push(arg.text);
    } else if (types && ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      out.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

function importIsTypeOnly(s: ts.ImportDeclaration): boolean {
  const clause = s.importClause;
  return (
    clause !== undefined &&
    (clause.isTypeOnly ||
      (clause.name === undefined &&
        clause.namedBindings !== undefined &&
        ts.isNamedImports(clause.namedBindings) &&
        clause.namedBindings.elements.length > 0 &&
        clause.namedBindings.elements.every((e) => e.isTypeOnly)))
  );
}

function exportIsTypeOnly(s: ts.ExportDeclaration): boolean {
  const named = s.exportClause;
  return s.isTypeOnly || (named !== undefined && ts.isNamedExports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly));
}

/**
 * The cycles of an import graph (node → the nodes it imports), each as `a -> b -> a`; empty when
 * there is none. Its own test is in test/layers.test.ts.
 *
 * @example
 * ```ts
 * cycles(new Map([['a', ['b']], ['b', ['a']]])); // ['a -> b -> a']
 * ```
 */
export function cycles(edges: Map<string, Iterable<string>>): string[] {
  const found: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (n: string): void => {
    state.set(n, 'open');
    stack.push(n);
    for (const m of edges.get(n) ?? []) {
      if (state.get(m) === 'open') found.push([...stack.slice(stack.indexOf(m)), m].join(' -> '));
      else if (!state.has(m)) visit(m);
    }
    stack.pop();
    state.set(n, 'done');
  };
  for (const n of [...edges.keys()].sort()) if (!state.has(n)) visit(n);
  return found;
}
