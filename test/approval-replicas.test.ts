// Joining a waiting approval request across replicas (#37 Deliver 1): two real `tool-envelope
// gateway` processes on one real PostgreSQL database, one policy file that needs an approval for
// `record`, one verified principal (a bearer token). Identical calls sent to both at once open one
// request (the store keeps one pending request per join key: the replica that loses the race joins
// the winner's); one CLI approval; the tool runs once, and the repeats on either replica get its
// outcome.
import { createHash, randomBytes } from 'node:crypto';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describePg } from '../src/store/test-support/pg.js';
import { oracleValidate } from './oracle.js';
import { freshDatabase, MAIN, type McpSession, type Replica, repoRoot, sessionsV2, startReplica, stopProcess } from './scale-out-support.js';

interface Envelope {
  status: string;
  output?: { id?: string };
  metadata?: { approvalId?: string; replay?: boolean };
}

describePg('identical calls to two gateway replicas on one PostgreSQL store join one approval request', (serverUrl) => {
  const dir = mkdtempSync(join(tmpdir(), 'te-approval-replicas-'));
  const countFile = join(dir, 'executions.log');
  const tokensFile = join(dir, 'tokens.yaml');
  const policyFile = join(dir, 'policy.yaml');
  const token = randomBytes(24).toString('base64url');
  // One operator key for the replicas and the CLI: each verifies the requests the others signed.
  const env = { TOOL_ENVELOPE_KEY: randomBytes(32).toString('hex'), XDG_CONFIG_HOME: join(dir, 'config') };
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let replicas: Replica[] = [];
  const open: McpSession[] = [];
  const connect = sessionsV2({ pin: '2026-07-28' });
  const envelope = (r: { structuredContent?: unknown }): Envelope => {
    expect(oracleValidate('contextos', r.structuredContent).errors).toEqual([]);
    return r.structuredContent as Envelope;
  };
  const ran = (id: string): string[] =>
    readFileSync(countFile, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith(`record ${id}`));

  beforeAll(async () => {
    if (!existsSync(MAIN)) execFileSync('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'ignore' });
    writeFileSync(countFile, '');
    writeFileSync(tokensFile, `tokens:\n  - sha256: ${createHash('sha256').update(token).digest('hex')}\n    principal: user:alice\n`);
    writeFileSync(
      policyFile,
      'version: 1\nrules:\n  - name: approve-records\n    match: { tool: record }\n    effect: require-approval\n  - name: rest\n    effect: allow\n',
    );
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
