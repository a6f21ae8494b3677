/**
 * Murphy's test of the call log: a real gateway process (`node dist/src/cli/main.js gateway`) on
 * a SQLite store, in front of a real upstream that notes every execution in a file, driven by a
 * real SDK client with 32 calls in flight, is SIGKILLed mid-load, five times. Afterwards every
 * call whose answer reached the client has its completed record, and every call the upstream
 * executed has a record: completed, or `interrupted` when the kill came first.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, tempDir } from '../src/mcp/test-support/harness.js';
import { openSqliteStore } from '../src/store/sqlite/index.js';

const MAIN = join(repoRoot, 'dist/src/cli/main.js');
const COUNTING = join(repoRoot, 'src/mcp/test-support/counting-server.mjs');
const IN_FLIGHT = 32;

interface Round {
  answered: string[];
  executed: string[];
  records: Map<string, string>;
}

async function round(dir: string, n: number, killAfter: number): Promise<Round> {
  const db = join(dir, `calls-${n}.db`);
  const countFile = join(dir, `executed-${n}.ndjson`);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MAIN, 'gateway', '--quiet', '--store', db, '--', process.execPath, COUNTING],
    env: { ...(process.env as Record<string, string>), COUNT_FILE: countFile },
    stderr: 'ignore',
  });
  const client = new Client({ name: 'crash-test', version: '1' });
  await client.connect(transport);
  const answered: string[] = [];
  let next = 0;
  let killed = false;
  const kill = (): void => {
    if (killed) return;
    killed = true;
    process.kill(transport.pid as number, 'SIGKILL');
  };
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (!killed) {
        const marker = `r${n}-${next++}`;
        try {
          await client.callTool({ name: 'write_note', arguments: { text: marker } });
        } catch {
          return; // the connection died with the gateway
        }
        if (killed) return; // answered after the kill: not counted, though it may well be recorded
        answered.push(marker);
        if (answered.length >= killAfter) kill();
      }
    }),
  );
  await client.close().catch(() => {});
  // The upstream has lost its client with the gateway: wait until it is gone and its notes are final.
  await new Promise((r) => setTimeout(r, 200));
  const executed = existsSync(countFile)
    ? readFileSync(countFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { args: { text: string } }).args.text)
    : [];
  const store = await openSqliteStore({ path: db, auditWorker: false });
  const records = new Map<string, string>();
  for await (const r of store.iterateAudit({}, 1000)) records.set((r.callEnvelope.args as { text: string }).text, r.status);
  await store.close();
  return { answered, executed, records };
}

describe('SIGKILL of a gateway under load (SQLite store)', () => {
  it('loses no answered call and shows every executing call as interrupted or complete, in 5 rounds', async () => {
    if (!existsSync(MAIN)) execFileSync('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'ignore' });
    const dir = tempDir();
    try {
      for (let n = 0; n < 5; n++) {
        const { answered, executed, records } = await round(dir, n, 200 + Math.floor(Math.random() * 60));
        expect(answered.length).toBeGreaterThanOrEqual(200);
        const missing = answered.filter((m) => records.get(m) !== 'ok');
        expect(missing, `round ${n}: answered calls without a completed record`).toEqual([]);
        const untraced = executed.filter((m) => records.get(m) !== 'ok' && records.get(m) !== 'interrupted');
        expect(untraced, `round ${n}: executed calls without a record`).toEqual([]);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
