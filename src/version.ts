/**
 * The package's version, read from its package.json (resolved by the package's own
 * name, so it is the same file from the sources and from the built package). Any
 * area but the core may import it; the core stays free of Node APIs.
 */
import { createRequire } from 'node:module';

/**
 * The version of the tool-envelope package (package.json `version`), e.g. for the
 * implementation info an MCP server or client announces.
 */
export const PACKAGE_VERSION: string = (createRequire(import.meta.url)('tool-envelope/package.json') as { version: string }).version;
