// The gateway (the verb, from the sources) over a real SQLite file whose audit inserts fail (a
// trigger that raises, as a full disk would): committing before answer, the call is not run (the
// counting server, which logs every execution, never sees it), the client gets the retryable
// `audit-log-unavailable` envelope, the failure is counted and /readyz says so; once the log can
// be written again the same call runs.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import { readToolResult } from '../../mcp/reader.js';
import { httpClient, repoRoot, tempDir } from '../../mcp/test-support/harness.js';
import { type ObservedGateway, startGateway } from '../test-support/observed-gateway.js';

const COUNTING = join(repoRoot, 'src/mcp/test-support/counting-server.mjs');
let g: ObservedGateway | undefined;
afterAll(async () => {
  await g?.stop();
});

describe('gateway: an audit log that cannot be written', () => {
  it('refuses to run calls until it can record them, and says so to the client, in metrics and in /readyz', async () => {
    const dir = tempDir();
    const file = join(dir, 'audit.db');
    const counts = join(dir, 'ran.jsonl');
    const config = join(dir, 'gw.json');
    writeFileSync(config, JSON.stringify({ upstreams: [{ name: 'counting', command: process.execPath, args: [COUNTING], env: { COUNT_FILE: counts } }] }));
    g = await startGateway(['--store', file, '--http', '0', '--metrics', '--quiet', '--config', config]);
    const { client } = await httpClient(g.url);
    const ran = (): string[] => (existsSync(counts) ? readFileSync(counts, 'utf8').trim().split('\n').filter(Boolean) : []);
    const call = async (): Promise<CallToolResult> => {
      const r = (await client.callTool({ name: 'read_notes', arguments: {} })) as CallToolResult;
      expect(oracleValidate('mcec', r.structuredContent).errors).toEqual([]);
      return r;
    };
    expect(readToolResult(await call()).status).toBe('ok');
    expect(ran()).toHaveLength(1);

    const db = new Database(file);
    db.exec("CREATE TRIGGER te_test_fault BEFORE INSERT ON audit BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END");
    const refused = await call();
    expect(refused.isError).toBe(true);
    expect(readToolResult(refused).error).toMatchObject({ category: 'internal', code: 'audit-log-unavailable' });
    expect(ran()).toHaveLength(1);
    const metrics = await (await fetch(`${g.base}/metrics`)).text();
    expect(Number(/^tool_envelope_audit_commit_failures_total (\d+)/m.exec(metrics)?.[1])).toBeGreaterThan(0);
    const ready = await fetch(`${g.base}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.text()).toMatch(/audit log cannot be written/);

    db.exec('DROP TRIGGER te_test_fault');
    db.close();
    expect(readToolResult(await call()).status).toBe('ok');
    expect(ran()).toHaveLength(2);
    await client.close();
  });
});
