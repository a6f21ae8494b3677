import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describePg } from '../src/store/test-support/pg.js';
import { freshDatabase, MAIN, type McpSession, type Replica, replicaFiles, startReplica, stopProcess } from './scale-out-support.js';

interface Envelope {
  status: string;
  output?: { id?: string };
  metadata?: { approvalId?: string; replay?: boolean };
}

describePg('identical calls to two gateway replicas on one PostgreSQL store join one approval request', (serverUrl) => {
  const { dir, countFile, tokensFile, policyFile, token, env, connect, envelope, ran, write } = replicaFiles<Envelope>('te-approval-replicas-');
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let replicas: Replica[] = [];
  const open: McpSession[] = [];

  beforeAll(async () => {
    write('version: 1\nrules:\n  - name: approve-records\n    match: { tool: record }\n    effect: require-approval\n  - name: rest\n    effect: allow\n');
    db = await freshDatabase(serverUrl);
    replicas = await Promise.all(
      ['a1', 'a2'].map((name) => startReplica({ name, storeUrl: db.url, tokensFile, countFile, env, args: ['--policy', policyFile] })),
    );
  });

  afterAll(async () => {
    await Promise.all(open.map((s) => s.close()));
    await Promise.all(replicas.map((r) => stopProcess(r.process)));
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('calls sent to both at once open one request; one approval; the tool runs once and every repeat gets its outcome', async () => {
    const cs = await Promise.all(replicas.map((r) => connect(`http://127.0.0.1:${r.port}/mcp`, token)));
    open.push(...cs);
    for (const round of ['r1', 'r2', 'r3']) {
      const paused = (await Promise.all([0, 1, 0, 1].map((i) => (cs[i] as McpSession).call('record', { id: round })))).map(envelope);
      expect(paused.map((e) => e.status)).toEqual(['paused', 'paused', 'paused', 'paused']);
      expect(new Set(paused.map((e) => e.metadata?.approvalId)).size).toBe(1);
    }
    const approvalId = envelope(await (cs[1] as McpSession).call('record', { id: 'r1' })).metadata?.approvalId as string;
    const cli = await promisify(execFile)(process.execPath, [MAIN, 'audit', 'approvals', 'approve', approvalId, '--store', db.url, '--wait', '30'], {
      env: { ...process.env, ...env },
    });
    expect(cli.stderr).toBe('');
    const done = (await Promise.all([0, 1].map((i) => (cs[i] as McpSession).call('record', { id: 'r1' })))).map(envelope);
    for (const e of done) expect(e).toMatchObject({ status: 'completed', metadata: { approvalId, replay: true } });
    expect(ran('r1')).toHaveLength(1);
    expect(ran('r2')).toHaveLength(0);
  });
});
