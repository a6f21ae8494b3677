/**
 * Durability: a child process writing audit records is SIGKILLed mid-stream. Every record it
 * had acknowledged must be there afterwards, and the store must be consistent.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openPostgresStore } from './postgres/index.js';
import { openSqliteStore } from './sqlite/index.js';
import { describePg, dropSchema, freshSchema } from './test-support/pg.js';
import type { Store } from './types.js';

const child = fileURLToPath(new URL('./test-support/audit-child.ts', import.meta.url));
const leaveOpenChild = fileURLToPath(new URL('./test-support/leave-open-child.ts', import.meta.url));

/** Runs the child until it has acknowledged `atLeast` records, SIGKILLs it, returns the acknowledged ids. */
async function writeAndKill(args: string[], atLeast: number): Promise<{ acked: string[]; signal: string | null }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', child, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const acked: string[] = [];
  let buf = '';
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<string | null>((resolve) => proc.on('exit', (_code, signal) => resolve(signal)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`child acknowledged only ${acked.length} records; stderr: ${stderr}`)), 60_000);
    proc.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      for (const l of lines) if (l && l !== 'ready') acked.push(l);
      if (acked.length >= atLeast && !proc.killed) {
        clearTimeout(timer);
        // Kill while the writer is still mid-stream: more records are queued and in flight.
        proc.kill('SIGKILL');
        resolve();
      }
    });
    proc.on('exit', () => {
      clearTimeout(timer);
      if (acked.length < atLeast) reject(new Error(`child exited early; stderr: ${stderr}`));
    });
  });
  const signal = await exited;
  // Lines already in the pipe before the kill were acknowledged too.
  for (const l of buf.split('\n')) if (l && l !== 'ready') acked.push(l);
  return { acked, signal };
}

async function expectAllPresent(store: Store, acked: string[], tool: string): Promise<number> {
  const stored = new Set<string>();
  for await (const r of store.iterateAudit({ tool }, 5000)) stored.add(r.id);
  const missing = acked.filter((id) => !stored.has(id));
  expect(missing).toEqual([]);
  return stored.size;
}

describe('SIGKILL mid-stream: sqlite', () => {
  it('keeps every acknowledged record and a consistent file', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-crash-'));
    try {
      const file = path.join(dir, 'audit.db');
      const { acked, signal } = await writeAndKill(['sqlite', file], 5000);
      expect(signal).toBe('SIGKILL');
      const store = await openSqliteStore({ path: file });
      expect(store.integrityCheck()).toBe('ok');
      const total = await expectAllPresent(store, acked, 'crash.sqlite');
      expect(total).toBeGreaterThanOrEqual(acked.length);
      // The log stays writable after recovery.
      expect(await store.countAudit()).toBe(total);
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describePg('SIGKILL mid-stream: postgres', (url) => {
  it('keeps every acknowledged record', async () => {
    const schema = freshSchema();
    try {
      const { acked, signal } = await writeAndKill(['postgres', url, schema], 3000);
      expect(signal).toBe('SIGKILL');
      const store = await openPostgresStore({ connectionString: url, schema });
      const total = await expectAllPresent(store, acked, 'crash.postgres');
      expect(total).toBeGreaterThanOrEqual(acked.length);
      const dup = await store.pool.query('SELECT COUNT(*)::int AS n FROM (SELECT id FROM audit GROUP BY id HAVING COUNT(*) > 1) d');
      expect(dup.rows[0].n).toBe(0);
      await store.close();
    } finally {
      await dropSchema(url, schema);
    }
  });
});

describe('a SQLite store that is never closed', () => {
  /** Runs the child; resolves with its exit code, or rejects if it is still running after 30 s. */
  function runChild(file: string, count: number): Promise<number | null> {
    const proc = spawn(process.execPath, ['--import', 'tsx', leaveOpenChild, file, String(count)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        proc.kill('SIGKILL');
        reject(new Error(`the process did not exit by itself; stderr: ${stderr}`));
      }, 30_000);
      proc.on('exit', (code) => {
        clearTimeout(timer);
        resolve(code);
      });
    });
  }

  it('lets the process exit once the records submitted are written (its threads do not hold it open)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-open-'));
    const file = path.join(dir, 'audit.db');
    try {
      expect(await runChild(file, 0)).toBe(0);
      expect(await runChild(file, 3000)).toBe(0);
      const store = await openSqliteStore({ path: file });
      expect(await store.countAudit({ tool: 'left.open' })).toBe(3000);
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
