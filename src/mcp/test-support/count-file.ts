// The executions counting-server.mjs logged to its COUNT_FILE: what a test reads to prove, from
// the upstream side, how often (and with which arguments) a tool ran.
import { existsSync, readFileSync } from 'node:fs';

/** The arguments of each execution of `tool` logged to `file`, in order (none when the file is absent). */
export function executions(file: string, tool: string): unknown[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { tool: string; args: unknown })
    .filter((l) => l.tool === tool)
    .map((l) => l.args);
}
