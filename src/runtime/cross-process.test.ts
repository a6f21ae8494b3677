/**
 * Idempotency across OS processes: two processes sharing one SQLite file, and two sharing one
 * PostgreSQL database, use the same key at the same moment; the side effect happens once.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { scopedIdempotencyKey } from '../governance/idempotency.js';
import { openStore } from '../store/index.js';
import { describePg, dropSchema, freshSchema } from '../store/test-support/pg.js';

const run = promisify(execFile);
const child = fileURLToPath(new URL('./test-support/governed-child.ts', import.meta.url));

async function twoProcesses(location: string, schema: string, dir: string): Promise<void> {
  const sideEffects = path.join(dir, 'side-effects.log');
  const startAt = String(Date.now() + 2500);
  const perProcess = 20;
  const results = await Promise.all(
    [0, 1].map(() =>
      run(process.execPath, ['--import', 'tsx', child, 'x', location, schema, sideEffects, 'shared-key', String(perProcess), startAt], { timeout: 60_000 }),
    ),
  );
  const lines = readFileSync(sideEffects, 'utf8').trim().split('\n');
  expect(lines).toHaveLength(1);
  const outcomes = results.flatMap((r) =>
    r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { status: string; replay: boolean; result: { pid: number } }),
  );
  expect(outcomes).toHaveLength(2 * perProcess);
  expect(outcomes.every((o) => o.status === 'ok' && o.result.pid === Number(lines[0]))).toBe(true);
  expect(outcomes.filter((o) => !o.replay)).toHaveLength(1);

  const store = await openStore(location, schema === '-' ? {} : { schema });
  try {
    expect(await store.countAudit({ tool: 'ledger.append' })).toBe(2 * perProcess);
    // Stored under the key scoped to the (shared) originating principal and the tool.
    const rec = await store.getIdempotency(
      scopedIdempotencyKey({ tenant: null, principal: 'automation:ledger-worker', tool: 'ledger.append', key: 'shared-key' }),
    );
    expect(rec).toMatchObject({ state: 'done', outcome: { status: 'ok', result: { pid: Number(lines[0]) } } });
  } finally {
    await store.close();
  }
}

describe('idempotency across processes: one SQLite file', () => {
  it('two processes, one key: one execution', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-xproc-'));
    try {
      await twoProcesses(path.join(dir, 'shared.db'), '-', dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describePg('idempotency across processes: one PostgreSQL database', (url) => {
  it('two processes, one key: one execution', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-xproc-'));
    const schema = freshSchema();
    try {
      await twoProcesses(url, schema, dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await dropSchema(url, schema);
    }
  });
});
