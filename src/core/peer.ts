/**
 * The typed error for an optional peer dependency that is not installed (better-sqlite3, pg, the
 * MCP SDK, @opentelemetry/api, ...): the package's subpaths load their driver on import, and a
 * missing one becomes `missing-dependency` naming the package to install, not Node's
 * ERR_MODULE_NOT_FOUND.
 */
import { ToolEnvelopeError } from './errors.js';

/**
 * `error` turned into a `missing-dependency` ToolEnvelopeError when it says that package `pkg` (or
 * a file inside it) cannot be found; any other error comes back unchanged.
 */
export function missingPeer(error: unknown, pkg: string, feature: string): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : '';
  const names = message.includes(`'${pkg}'`) || message.includes(`'${pkg}/`) || message.includes(`"${pkg}"`) || message.includes(`"${pkg}/`);
  if ((code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') || !names) return error;
  return new ToolEnvelopeError('missing-dependency', `${feature} needs the package ${pkg}, which is not installed: npm install ${pkg}`, {
    issues: [{ code: 'missing-dependency', path: '', message: `npm install ${pkg}`, params: { package: pkg } }],
    cause: error,
  });
}
