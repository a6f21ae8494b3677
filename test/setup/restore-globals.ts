/**
 * Runs around every test file. The suite runs files one after another in a worker's one module
 * graph (`isolate: false` in vitest.config.ts: a file's imports are not evaluated again for it), so
 * what a file changes in the process is put back here when it ends, and the next file starts as if
 * alone: the environment, the speed tricks' plain references (each off by default), the clock.
 */
import { afterAll, beforeAll, vi } from 'vitest';
import { useReferenceDeadlines } from '../../src/runtime/deadline.js';
import { useReferenceIds } from '../../src/runtime/ids.js';
import { useReferenceCallKeys } from '../../src/store/query.js';
import { useReferenceTextBinding } from '../../src/store/sqlite/audit-sql.js';
import { useReferenceAuditCommits } from '../../src/store/sqlite/audit-worker.js';
import { useReferenceToolDispatch } from '../../src/mcp/gateway/session-server.js';
import { useReferenceSessionTransport } from '../../src/mcp/serve/http.js';
import { useReferenceUpstreamFetch } from '../../src/mcp/upstream/node-fetch.js';

let env: Record<string, string | undefined> = {};
let cwd = '';

beforeAll(() => {
  env = { ...process.env };
  cwd = process.cwd();
});

afterAll(() => {
  for (const key of Object.keys(process.env)) if (!(key in env)) delete process.env[key];
  for (const [key, value] of Object.entries(env)) if (process.env[key] !== value) process.env[key] = value;
  if (process.cwd() !== cwd) process.chdir(cwd);
  vi.useRealTimers();
  vi.restoreAllMocks();
  for (const off of [
    useReferenceDeadlines,
    useReferenceIds,
    useReferenceCallKeys,
    useReferenceTextBinding,
    useReferenceAuditCommits,
    useReferenceToolDispatch,
    useReferenceSessionTransport,
    useReferenceUpstreamFetch,
  ])
    off(false);
});
