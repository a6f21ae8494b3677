// Marks the CLI entry point executable after tsc emits it.
import { chmodSync, existsSync } from 'node:fs';
const bin = new URL('../dist/src/cli/main.js', import.meta.url);
if (existsSync(bin)) chmodSync(bin, 0o755);
