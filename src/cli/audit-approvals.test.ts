import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../test/oracle.js';
import { osIdentity } from '../governance/identity.js';
import { tokenDigest } from '../mcp/serve/auth.js';
import { defineTool } from '../runtime/define.js';
import { createGovernedRuntime } from '../runtime/governed.js';
import { createRuntime } from '../runtime/runtime.js';
import { openPostgresStore } from '../store/postgres/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { describePg, dropSchema, freshSchema } from '../store/test-support/pg.js';
import type { AuditRecord, Store } from '../store/types.js';
import * as audit from './audit.js';
import { runVerb } from './test-support/run-verb.js';

/** The approver: the OS user running the CLI. */
const me = `user:${osIdentity().principal.id}`;

const WORKER = fileURLToPath(new URL('./test-support/audit-approval-worker.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'te-approvals-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Worker {
  proc: ChildProcess;
  lines: string[];
  waitFor(pred: (line: string) => boolean): Promise<string>;
}

function startWorker(args: string[]): Worker {
  const proc = spawn(process.execPath, ['--import', 'tsx', WORKER, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const waiters: { pred: (l: string) => boolean; resolve: (l: string) => void }[] = [];
  let stderr = '';
  proc.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  createInterface({ input: proc.stdout! }).on('line', (line) => {
    lines.push(line);
    for (const w of [...waiters])
      if (w.pred(line)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
  });
  return {
    proc,
    lines,
    waitFor: (pred) =>
      new Promise((resolve, reject) => {
        const found = lines.find(pred);
        if (found) return resolve(found);
        waiters.push({ pred, resolve });
        proc.once('exit', (code) => reject(new Error(`worker exited (${code}) before the expected line; stderr: ${stderr}`)));
      }),
  };
}

async function stopWorker(w: Worker): Promise<void> {
  if (w.proc.exitCode !== null) return;
  const exited = new Promise((r) => w.proc.once('exit', r));
  w.proc.kill('SIGTERM');
  await exited;
}

const purge = defineTool({
  name: 'warehouse_purge',
  description: 'Deletes every item of a warehouse.',
  approvalMode: 'destructive',
  input: z.object({ warehouse: z.string() }),
  handler: async () => {
    throw new Error('the expiry test never runs the tool');
  },
});

function approvalSuite(
  open: () => Promise<{ store: Store; kind: string; location: string; schema: string; flags: string[]; cleanup: () => Promise<void> }>,
): void {
  const workers: Worker[] = [];
  afterEach(async () => {
    await Promise.all(workers.splice(0).map(stopWorker));
  });

  it('approving a paused call from the CLI runs it exactly once (two owning processes racing); its final envelope lands in the audit log', async () => {
    const { store, kind, location, schema, flags, cleanup } = await open();
    try {
      const counter = join(dir, `counter-${Math.random().toString(36).slice(2)}`);
      const a = startWorker([kind, location, schema, counter, 'pause']);
      workers.push(a);
      await a.waitFor((l) => l === 'watching');
      const [approveId, rejectId] = a.lines.filter((l) => l.startsWith('approval ')).map((l) => l.slice(9)) as [string, string];
      const b = startWorker([kind, location, schema, counter]);
      workers.push(b);
      await b.waitFor((l) => l === 'watching');

      const cli = (...args: string[]) => runVerb(audit, [...args, ...flags], { cwd: dir });
      const pending = await cli('approvals', '--format', 'json');
      expect((JSON.parse(pending.stdout) as { id: string }[]).map((x) => x.id).sort()).toEqual([approveId, rejectId].sort());

      // Not yet approved: nothing ran.
      await new Promise((r) => setTimeout(r, 300));
      expect(existsSync(counter)).toBe(false);

      const approved = await cli('approvals', 'approve', approveId, '--reason', 'ticket OPS-12', '--wait', '30');
      expect(approved.stderr).toBe('');
      expect(approved.code).toBe(0);
      expect(approved.stdout).toContain(`${approveId}: approved by ${me}`);
      expect(approved.stdout).toContain(`${approveId}: completed`);

      const rejected = await cli('approvals', 'reject', rejectId, '--reason', 'wrong warehouse');
      expect(rejected.code).toBe(0);
      expect(rejected.stdout).toContain(`rejected by ${me}`);

      // Both owners keep polling for a while: still exactly one run, of the approved call only.
      await new Promise((r) => setTimeout(r, 500));
      const runs = readFileSync(counter, 'utf8').trimEnd().split('\n');
      expect(runs).toHaveLength(1);
      expect(runs[0]).toMatch(/^\d+ north$/);

      const again = await cli('approvals', 'approve', approveId);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain(`is completed (decided by ${me}), not pending`);

      const request = await store.getApproval(approveId);
      expect(request).toMatchObject({ state: 'completed', decidedBy: me, decisionReason: 'ticket OPS-12', outcome: { status: 'completed' } });
      const records = (await store.listAudit({ toolCallId: request!.toolCallId }, { order: 'asc' })).records;
      expect(records.map((r) => r.status)).toEqual(['paused', 'completed']);
      const final = records[1] as AuditRecord;
      expect(final.approvalId).toBe(approveId);
      expect(oracleValidate('contextos-result', final.resultEnvelope)).toEqual({ valid: true, errors: [] });
      expect(final.resultEnvelope).toMatchObject({ status: 'completed', tool_call_id: request!.toolCallId, artifacts: ['file:///var/purge/north.log'] });
      expect(final.outcome).toMatchObject({ metadata: { approvalId: approveId, approvedBy: me } });
      // The CLI shows it too.
      const shown = await cli('show', final.id);
      expect(shown.stdout).toMatch(/status\s+completed/);
      expect(shown.stdout).toMatch(new RegExp(`approval\\s+${approveId}`));

      const rejectedRequest = await store.getApproval(rejectId);
      expect(rejectedRequest).toMatchObject({ state: 'rejected', decidedBy: me, outcome: { status: 'rejected' } });
      const rejectedRecords = (await store.listAudit({ toolCallId: rejectedRequest!.toolCallId }, { order: 'asc' })).records;
      expect(rejectedRecords.map((r) => r.status)).toEqual(['paused', 'rejected']);
      expect(oracleValidate('contextos-result', rejectedRecords[1]!.resultEnvelope)).toEqual({ valid: true, errors: [] });
      expect(rejectedRecords[1]!.resultEnvelope).toMatchObject({ status: 'rejected', error: `Rejected by ${me}: wrong warehouse` });
    } finally {
      await store.close();
      await cleanup();
    }
  }, 120_000);

  it('an expired request cannot be approved: it is settled as expired and logged as rejected', async () => {
    const { store, flags, cleanup } = await open();
    try {
      const governed = createGovernedRuntime({ runtime: createRuntime({ tools: [purge] }), store, approvalTtlMs: 1 });
      const paused = await governed.invoke('warehouse_purge', { warehouse: 'west' }, { idempotencyKey: 'purge-west' });
      await governed.flush();
      await new Promise((r) => setTimeout(r, 10));
      const id = paused.metadata!.approvalId as string;
      const r = await runVerb(audit, ['approvals', 'approve', id, ...flags]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`request ${id} expired`);
      expect(await store.getApproval(id)).toMatchObject({ state: 'expired', outcome: { status: 'rejected', error: { code: 'approval-expired' } } });
      const records = (await store.listAudit({ toolCallId: paused.toolCallId! }, { order: 'asc' })).records;
      expect(records.map((x) => [x.status, x.errorCode])).toEqual([
        ['paused', 'approval-required'],
        ['rejected', 'approval-expired'],
      ]);
      await governed.close();
    } finally {
      await store.close();
      await cleanup();
    }
  });

  it('an approver token: its identity (with the approver role) decides; a token without the role, or a principal of the call, cannot', async () => {
    const { store, flags, cleanup } = await open();
    try {
      const governed = createGovernedRuntime({ runtime: createRuntime({ tools: [purge] }), store, principalChain: [{ kind: 'user', id: 'ops' }] });
      const paused = await governed.invoke('warehouse_purge', { warehouse: 'tokens' }, { idempotencyKey: 'purge-tokens' });
      const mine = await governed.invoke('warehouse_purge', { warehouse: 'own' }, { idempotencyKey: 'purge-own' });
      await governed.close();
      const tokens = join(dir, `tokens-${Math.random().toString(36).slice(2)}.yaml`);
      writeFileSync(
        tokens,
        `tokens:\n  - { sha256: ${tokenDigest('approver-secret')}, principal: "user:rita", roles: [approver] }\n  - { sha256: ${tokenDigest('plain-secret')}, principal: "user:pete" }\n  - { sha256: ${tokenDigest('ops-secret')}, principal: "user:ops", roles: [approver] }\n`,
      );
      const as = (token: string, id: string) =>
        runVerb(audit, ['approvals', 'approve', id, '--tokens', tokens, ...flags], { env: { TOOL_ENVELOPE_TOKEN: token } });
      const noRole = await as('plain-secret', paused.metadata!.approvalId as string);
      // Refused decisions exit 1 (README: 2 is a usage or I/O error).
      expect(noRole.code).toBe(1);
      expect(noRole.stderr).toContain('does not have the approver role');
      const unknown = await as('guess', paused.metadata!.approvalId as string);
      expect(unknown.code).toBe(1);
      const self = await as('ops-secret', mine.metadata!.approvalId as string);
      expect(self.code).toBe(1);
      expect(self.stderr).toContain('may not approve it');
      const ok = await as('approver-secret', paused.metadata!.approvalId as string);
      expect(ok.stderr).toBe('');
      expect(ok.code).toBe(0);
      expect(await store.getApproval(paused.metadata!.approvalId as string)).toMatchObject({
        state: 'approved',
        decidedBy: 'user:rita',
        decisionSignature: expect.any(String),
      });
      expect(await store.getApproval(mine.metadata!.approvalId as string)).toMatchObject({ state: 'pending' });
    } finally {
      await store.close();
      await cleanup();
    }
  });

  // As in the console: a token of one tenant does not find another tenant's requests; an admin token does.
  it("an approver token of one tenant cannot decide another tenant's request; an admin token can", async () => {
    const { store, flags, cleanup } = await open();
    try {
      const governed = createGovernedRuntime({
        runtime: createRuntime({ tools: [purge] }),
        store,
        principalChain: [{ kind: 'user', id: 'ops', tenant_id: 'acme' }],
      });
      const acme = (await governed.invoke('warehouse_purge', { warehouse: 'acme-1' }, { idempotencyKey: 'purge-acme' })).metadata!.approvalId as string;
      const acme2 = (await governed.invoke('warehouse_purge', { warehouse: 'acme-2' }, { idempotencyKey: 'purge-acme-2' })).metadata!.approvalId as string;
      await governed.close();
      const tokens = join(dir, `tokens-${Math.random().toString(36).slice(2)}.yaml`);
      writeFileSync(
        tokens,
        `tokens:\n  - { sha256: ${tokenDigest('globex-secret')}, principal: "user:gina", tenant: globex, roles: [approver] }\n  - { sha256: ${tokenDigest('acme-secret')}, principal: "user:abe", tenant: acme, roles: [approver] }\n  - { sha256: ${tokenDigest('admin-secret')}, principal: "user:ada", roles: [approver, admin] }\n`,
      );
      const as = (token: string, verb: string, id: string) =>
        runVerb(audit, ['approvals', verb, id, '--tokens', tokens, ...flags], { env: { TOOL_ENVELOPE_TOKEN: token } });
      for (const verb of ['approve', 'reject']) {
        const other = await as('globex-secret', verb, acme);
        expect(other.code).toBe(1);
        expect(other.stderr).toContain(`no approval request "${acme}"`);
      }
      expect(await store.getApproval(acme)).toMatchObject({ state: 'pending' });
      expect((await as('acme-secret', 'approve', acme)).code).toBe(0);
      expect((await as('admin-secret', 'reject', acme2)).code).toBe(0);
      expect(await store.getApproval(acme)).toMatchObject({ state: 'approved', decidedBy: 'user:abe' });
      expect(await store.getApproval(acme2)).toMatchObject({ state: 'rejected', decidedBy: 'user:ada' });
    } finally {
      await store.close();
      await cleanup();
    }
  });

  it('--wait gives up with exit 1 when no process owns the tool', async () => {
    const { store, flags, cleanup } = await open();
    try {
      const governed = createGovernedRuntime({ runtime: createRuntime({ tools: [purge] }), store });
      const paused = await governed.invoke('warehouse_purge', { warehouse: 'south' }, { idempotencyKey: 'purge-south' });
      await governed.close();
      const id = paused.metadata!.approvalId as string;
      const r = await runVerb(audit, ['approvals', 'approve', id, '--wait', '1', ...flags]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('is approved but no process ran it within 1 s');
      expect(await store.getApproval(id)).toMatchObject({ state: 'approved', decidedBy: me });
    } finally {
      await store.close();
      await cleanup();
    }
  });
}

describe('CLI approvals over SQLite', () => {
  approvalSuite(async () => {
    const path = join(dir, `approvals-${Math.random().toString(36).slice(2)}.db`);
    return { store: await openSqliteStore({ path }), kind: 'sqlite', location: path, schema: '-', flags: ['--store', path], cleanup: async () => {} };
  });
});

describe('approve --wait stopped by a signal (a real CLI process, no process owning the tool)', () => {
  const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    it(`${signal}: says the approval stands and the call has not run, exits ${code}`, async () => {
      const path = join(dir, `signal-${signal}.db`);
      const store = await openSqliteStore({ path });
      try {
        const governed = createGovernedRuntime({ runtime: createRuntime({ tools: [purge] }), store });
        const paused = await governed.invoke('warehouse_purge', { warehouse: signal }, { idempotencyKey: `purge-${signal}` });
        await governed.close();
        const id = paused.metadata!.approvalId as string;
        const child = spawn(process.execPath, ['--import', 'tsx', MAIN, 'audit', 'approvals', 'approve', id, '--store', path, '--wait', '30'], {
          stdio: ['ignore', 'pipe', 'pipe'],
          env: { ...process.env, TOOL_ENVELOPE_STORE: '' },
        });
        let stdout = '';
        let stderr = '';
        child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
        const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
        // Approved (the line is printed), then waiting: the signal comes during --wait.
        await new Promise<void>((resolve, reject) => {
          child.stdout!.setEncoding('utf8').on('data', (c: string) => {
            stdout += c;
            if (stdout.includes('approved by')) resolve();
          });
          child.once('exit', () => reject(new Error(`exited before approving: ${stderr}`)));
        });
        await new Promise((r) => setTimeout(r, 300));
        const sent = Date.now();
        child.kill(signal);
        expect(await exited).toBe(code);
        expect(Date.now() - sent).toBeLessThan(3_000);
        expect(stderr).toContain(`stopped waiting: the approval of ${id} stands; its call has no outcome yet`);
        expect(stderr).not.toContain('no process ran it');
        expect(await store.getApproval(id)).toMatchObject({ state: 'approved', decidedBy: me });
      } finally {
        await store.close();
      }
    }, 60_000);
  }
});

describePg('CLI approvals over PostgreSQL', (url) => {
  approvalSuite(async () => {
    const schema = freshSchema();
    return {
      store: await openPostgresStore({ connectionString: url, schema }),
      kind: 'postgres',
      location: url,
      schema,
      flags: ['--store', url, '--pg-schema', schema],
      cleanup: () => dropSchema(url, schema),
    };
  });
});
