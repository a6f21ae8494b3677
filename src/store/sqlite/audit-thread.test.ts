/**
 * The audit writer and checkpointer threads as the package runs them: compiled entry files of
 * dist/ started by URL (`new Worker(new URL('./audit-thread.js', import.meta.url))`), no code
 * evaluated from a string. (The other store tests run the TypeScript entries through tsx.)
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const repo = fileURLToPath(new URL('../../../', import.meta.url));
const dir = mkdtempSync(path.join(tmpdir(), 'te-thread-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the SQLite audit threads', () => {
  it('are real entry files: nothing in the store starts a worker from source text', () => {
    const here = path.join(repo, 'src/store/sqlite');
    for (const f of readdirSync(here).filter((n) => n.endsWith('.ts') && !n.endsWith('.test.ts'))) {
      const text = readFileSync(path.join(here, f), 'utf8');
      expect(text, f).not.toMatch(/eval:\s*true/);
      expect(text, f).not.toMatch(/\.toString\(\)\}/);
    }
    for (const entry of ['audit-thread.js', 'checkpoint-thread.js', 'audit-protocol.js']) {
      expect(existsSync(path.join(repo, 'dist/src/store/sqlite', entry)), `dist/src/store/sqlite/${entry} (run npm run build)`).toBe(true);
    }
  });

  it('commit through the compiled worker, whatever the host process was started with: every acknowledged record is in the file, chained, with no warning', () => {
    const file = path.join(dir, 'built.db');
    const script = `
      const warnings = [];
      process.on('warning', (w) => warnings.push(String(w.message)));
      const { openSqliteStore } = await import(${JSON.stringify(path.join(repo, 'dist/src/store/sqlite/index.js'))});
      const { AuditWriter, newAuditId } = await import(${JSON.stringify(path.join(repo, 'dist/src/store/index.js'))});
      const { loadOperatorKey } = await import(${JSON.stringify(path.join(repo, 'dist/src/store/operator-key.js'))});
      const chainKey = await loadOperatorKey({ env: { TOOL_ENVELOPE_KEY: 'a'.repeat(64) } });
      const store = await openSqliteStore({ path: ${JSON.stringify(file)}, chainKey });
      const writer = new AuditWriter(store);
      const base = { tool: 't', status: 'ok', category: null, errorCode: null, runId: 'r', traceId: 'x', sessionId: null, startedAt: 1, endedAt: 2,
        latencyMs: 1, callEnvelope: { args: {} }, resultEnvelope: { output: 1 }, outcome: { status: 'ok', result: 1 }, principalChain: [],
        policyDecision: null, idempotencyKey: null, replay: false, approvalId: null };
      await Promise.all(Array.from({ length: 300 }, (_, i) => writer.record({ ...base, id: newAuditId(), toolCallId: 'c' + i })));
      await writer.close();
      await store.close();
      const again = await openSqliteStore({ path: ${JSON.stringify(file)}, auditWorker: false, chainKey });
      const count = await again.countAudit();
      const chained = again.db.prepare('SELECT COUNT(*) AS n FROM audit WHERE chain_pos IS NOT NULL').get().n;
      const writers = again.db.prepare('SELECT COUNT(*) AS n FROM audit_writers').get().n;
      await again.close();
      process.stdout.write(JSON.stringify({ count, chained, writers, warnings }));
    `;
    // A host started with an entry of its own (-e) and a preload (tsx): none of it reaches the threads.
    const r = spawnSync(process.execPath, ['--input-type=module', '--import', 'tsx', '-e', script], { cwd: repo, encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    // One writer: the worker's chain (the calling thread's own chain never wrote).
    expect(JSON.parse(r.stdout)).toEqual({ count: 300, chained: 300, writers: 1, warnings: [] });
  });
});
