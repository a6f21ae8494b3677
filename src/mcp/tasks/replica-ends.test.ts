// A task's end completes its audit record on whichever replica serves it, exactly once: real gateway
// processes (the built CLI over Streamable HTTP with bearer tokens) sharing one SQLite file, and one
// real PostgreSQL database, in front of one real task upstream over HTTP (task-server.mjs --http, as
// replicas share a URL upstream); official v2 clients pinned to 2026-07-28 (stateless: any replica
// serves any request). The creating replica is SIGKILLed after the task is created and the other
// serves tasks/get to the end; then two replicas serve the end at once. Read from the database itself;
// `audit verify` (the CLI) checks the hash chains the writers kept.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAIN, freshDatabase, repoRoot, stopProcess } from '../../../test/scale-out-support.js';
import { oracleValidate } from '../../../test/oracle.js';
import type { JsonObject } from '../../core/index.js';
import { openPostgresStore } from '../../store/postgres/index.js';
import { openSqliteStore } from '../../store/sqlite/index.js';
import { describePg } from '../../store/test-support/pg.js';
import type { AuditRecord, Store } from '../../store/types.js';
import type { TaskDispatch } from './dispatch.js';
import { connectTasks, declared, rawCall } from '../test-support/task-clients.js';
import { startHttpTaskServer } from '../test-support/task-upstream.js';

const TASK_MS = 1_500;
const dir = mkdtempSync(join(tmpdir(), 'te-task-replicas-'));
const token = randomBytes(24).toString('base64url');
const tokensFile = join(dir, 'tokens.yaml');
// The operator key every replica shares (docs/deploy.md).
const env = { TOOL_ENVELOPE_KEY: randomBytes(32).toString('hex'), XDG_CONFIG_HOME: join(dir, 'config'), TOOL_ENVELOPE_STORE: '' };
const closers: (() => Promise<unknown>)[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let up: Awaited<ReturnType<typeof startHttpTaskServer>>;

beforeAll(async () => {
  if (!existsSync(MAIN)) execFileSync('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'ignore' });
  writeFileSync(tokensFile, `tokens:\n  - sha256: ${createHash('sha256').update(token).digest('hex')}\n    principal: user:alice\n    tenant: acme\n`);
  up = await startHttpTaskServer(TASK_MS);
}, 60_000);
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => {});
  await up?.close();
});

/** One replica: the built CLI on `store`, in front of the shared HTTP task upstream. */
async function replica(store: string): Promise<{ url: string; child: ChildProcess; log: () => string }> {
  const args = [MAIN, 'gateway', '--http', '0', '--auth', 'tokens', tokensFile, '--store', store, '--dialect', 'contextos', '--health-interval', '0'];
  const child = spawn(process.execPath, [...args, '--url', up.url], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  closers.push(() => stopProcess(child));
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
  for (const until = Date.now() + 30_000; ; await sleep(25)) {
    const url = /MCP endpoint \(Streamable HTTP\): (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(out)?.[1];
    if (url) return { url, child, log: () => out };
    if (Date.now() > until || child.exitCode !== null) throw new Error(`the replica did not start:\n${out}`);
  }
}

/** The record of each slow_report call on `topic`, with the statuses of the database rows of its id (`started`, then its outcome). */
type Rows = (topic: string) => Promise<{ record: AuditRecord; statuses: string[] }[]>;

const client = async (url: string): Promise<TaskDispatch> => (await connectTasks(url, token, closers)).dispatch;

async function createTask(d: TaskDispatch, topic: string): Promise<string> {
  const created = await rawCall(d, 'tools/call', { name: 'slow_report', arguments: { topic }, ...declared });
  expect(created.error).toBeUndefined();
  expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
  return String(created.result?.taskId);
}

/** Polls the task through `d` until it reads completed. */
async function pollToEnd(d: TaskDispatch, taskId: string): Promise<JsonObject> {
  for (let i = 0; i < 600; i++) {
    const got = await rawCall(d, 'tasks/get', { taskId, ...declared });
    expect(got.error).toBeUndefined();
    if (got.result?.status === 'completed') return got.result;
    await sleep(20);
  }
  throw new Error('the task did not complete');
}

async function until<T>(what: string, read: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  for (const end = Date.now() + ms; ; await sleep(50)) {
    const got = await read();
    if (got !== undefined) return got;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
  }
}

function suite(name: string, setup: () => Promise<{ store: string; rows: Rows }>) {
  describe(name, () => {
    let store = '';
    let rows: Rows;
    beforeAll(async () => {
      ({ store, rows } = await setup());
    }, 60_000);

    /** The record of `topic` once an outcome completed it; fails on a second outcome row. */
    const outcomeOf = (topic: string) =>
      until(`the outcome of ${topic}`, async () => {
        const [one, ...more] = await rows(topic);
        expect(more).toEqual([]);
        if (!one || one.record.status === 'interrupted') return undefined;
        expect(one.statuses.sort()).toEqual([one.record.status, 'started'].sort());
        return one.record;
      });

    const verify = () => {
      const r = spawnCli(['audit', 'verify', '--store', store, '--format', 'json']);
      expect(r.code, r.out).toBe(0);
    };

    it('the creating replica is SIGKILLed mid-task: the replica that serves tasks/get to the end completes the record, once', async () => {
      const [a, b] = [await replica(store), await replica(store)];
      const topic = `killed-${randomBytes(3).toString('hex')}`;
      const t0 = Date.now();
      const taskId = await createTask(await client(a.url), topic);
      // The creation's `started` record is in the store before the replica goes.
      const [started] = await until('the started record', async () => {
        const got = await rows(topic);
        return got.length > 0 ? got : undefined;
      });
      expect(started).toMatchObject({ record: { status: 'interrupted' }, statuses: ['started'] });
      await stopProcess(a.child, 'SIGKILL');
      const task = await pollToEnd(await client(b.url), taskId);
      expect((task.result as JsonObject).content).toEqual([{ type: 'text', text: `report for ${topic}` }]);
      const done = await outcomeOf(topic);
      expect(done).toMatchObject({ id: started!.record.id, status: 'ok', category: null, errorCode: null });
      expect(done.principalChain[0]).toMatchObject({ kind: 'user', id: 'alice', tenant_id: 'acme' });
      expect(oracleValidate('contextos-result', done.resultEnvelope).errors).toEqual([]);
      expect(done.resultEnvelope).toMatchObject({ status: 'ok', output: { topic, pages: 3 } });
      // The whole task, call to end.
      expect(done.latencyMs).toBeGreaterThanOrEqual(TASK_MS - 50);
      expect(done.latencyMs).toBeLessThanOrEqual(Date.now() - t0 + 50);
      // Polled again: nothing more is written.
      await pollToEnd(await client(b.url), taskId);
      await sleep(300);
      expect((await rows(topic)).map((r) => r.statuses.length)).toEqual([2]);
      expect(b.log()).not.toMatch(/audit.*(failed|not written)/i);
      verify();
      await stopProcess(b.child);
    }, 90_000);

    it('two replicas serve the end at once (and the creating one watches it): one outcome', async () => {
      const [a, b] = [await replica(store), await replica(store)];
      const topic = `raced-${randomBytes(3).toString('hex')}`;
      const [atA, atB] = [await client(a.url), await client(b.url)];
      const taskId = await createTask(atA, topic);
      const [fromA, fromB] = await Promise.all([pollToEnd(atA, taskId), pollToEnd(atB, taskId)]);
      expect(fromA.status).toBe('completed');
      expect(fromB.status).toBe('completed');
      const done = await outcomeOf(topic);
      expect(done).toMatchObject({ status: 'ok' });
      expect(done.resultEnvelope).toMatchObject({ status: 'ok', output: { topic } });
      await sleep(500);
      expect((await rows(topic)).map((r) => r.statuses.sort())).toEqual([['ok', 'started']]);
      // No replica tried a second outcome (the store's unique index would refuse it, failing the writer's batch).
      for (const r of [a, b]) expect(r.log()).not.toMatch(/audit.*(failed|not written)/i);
      verify();
      await Promise.all([stopProcess(a.child), stopProcess(b.child)]);
    }, 90_000);
  });
}

function spawnCli(args: string[]): { code: number | null; out: string } {
  try {
    const out = execFileSync(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return { code: 0, out };
  } catch (e) {
    const err = e as { status: number | null; stdout?: string; stderr?: string };
    return { code: err.status, out: `${err.stdout ?? ''}${err.stderr ?? ''}` };
  }
}

const ofTopic = (topic: string) => (r: AuditRecord) => (r.callEnvelope as { args?: { topic?: string } }).args?.topic === topic;

/** The records of `topic` through the store's own reads (a started record reads as interrupted), and the rows of an id by status. */
function readsOf(store: Store, statuses: (id: string) => Promise<string[]>): Rows {
  return async (topic) => {
    const { records } = await store.listAudit({ tool: 'slow_report' });
    const mine = records.filter(ofTopic(topic));
    return Promise.all(mine.map(async (record) => ({ record, statuses: await statuses(record.id) })));
  };
}

suite('on one SQLite file shared by two gateway processes', async () => {
  const file = join(dir, 'shared.db');
  // Created by the first replica; read here without a writer.
  let store: Store | undefined;
  return {
    store: file,
    rows: async (topic) => {
      if (!existsSync(file)) return [];
      if (!store) {
        store = await openSqliteStore({ path: file, chainKey: false, auditWorker: false });
        // Run last: closers run in reverse.
        closers.unshift(async () => store?.close());
      }
      return readsOf(store, async (id) => {
        const db = new Database(file, { readonly: true, fileMustExist: true });
        try {
          return (db.prepare('SELECT status FROM audit WHERE id = ?').all(id) as { status: string }[]).map((r) => r.status);
        } finally {
          db.close();
        }
      })(topic);
    },
  };
});

describePg('tasks across replicas on PostgreSQL', (serverUrl) => {
  let db: Awaited<ReturnType<typeof freshDatabase>> | undefined;
  let store: Store | undefined;
  afterAll(async () => {
    // The replicas first: they hold connections to the database.
    for (const close of closers.splice(0).reverse()) await close().catch(() => {});
    await store?.close();
    await db?.drop();
  });
  suite('on one PostgreSQL database shared by two gateway processes', async () => {
    db = await freshDatabase(serverUrl);
    const url = db.url;
    return {
      store: url,
      rows: async (topic) => {
        store ??= await openPostgresStore({ connectionString: url, chainKey: false });
        return readsOf(store, async (id) => {
          const c = new pg.Client({ connectionString: url });
          await c.connect();
          try {
            return (await c.query<{ status: string }>('SELECT status FROM audit WHERE id = $1', [id])).rows.map((r) => r.status);
          } finally {
            await c.end();
          }
        })(topic);
      },
    };
  });
});
