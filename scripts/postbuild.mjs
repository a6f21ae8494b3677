// After tsc: bundles the core into one module (scripts/bundle-core.mjs), writes the guards of
// the subpaths that need a driver (scripts/peer-guards.mjs), then marks the CLI entry point executable.
import { chmodSync, existsSync } from 'node:fs';
await import('./bundle-core.mjs');
await import('./peer-guards.mjs');
const bin = new URL('../dist/src/cli/main.js', import.meta.url);
if (existsSync(bin)) chmodSync(bin, 0o755);
