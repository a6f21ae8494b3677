// After tsc: bundles the core into one module (scripts/bundle-core.mjs), then marks
// the CLI entry point executable.
import { chmodSync, existsSync } from 'node:fs';
await import('./bundle-core.mjs');
const bin = new URL('../dist/src/cli/main.js', import.meta.url);
if (existsSync(bin)) chmodSync(bin, 0o755);
