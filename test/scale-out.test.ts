// Scale-out (#14 point 5), with real processes only: three gateway replicas (the built CLI, each in
// front of its own stdio upstream) on one real PostgreSQL database, behind a real nginx running the
// config of docs/deploy.md, driven by the real MCP SDK client. Executions are counted from the
// upstream side (test/fixtures/scale-upstream.mjs appends a line per run), routing from nginx's
// access log ($upstream_addr), the audit log from the database itself.
//
// Each era's client is a SessionFactory (test/scale-out-support.ts); a new era is one more row of
// ERAS. The sticky-routing case applies to eras with sessions only.
import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as gatewayVerb from '../src/cli/gateway.js';
import { runVerb } from '../src/cli/test-support/run-verb.js';
import { replicaSessionId } from '../src/mcp/serve/http.js';
import { describePg } from '../src/store/test-support/pg.js';
import { oracleValidate } from './oracle.js';
import { describeNeeding } from './prereqs.js';
import {
  MAIN,
  type McpSession,
  type Nginx,
  type Replica,
  type SessionFactory,
  freePort,
  type NginxLogLine,
  consoleSignInFrom,
  freshDatabase,
  nginxSiteFromDoc,
  repoRoot,
  sessions2025,
  sessionsV2,
  startNginx,
  startReplica,
  stopProcess,
} from './scale-out-support.js';

const modern = sessionsV2({ pin: '2026-07-28' });
const ERAS: [string, SessionFactory, { sessions: boolean }][] = [
  ['2025-11-25 (sessions, SDK v1 client)', sessions2025, { sessions: true }],
  ['2025-11-25 (sessions, SDK v2 client, legacy negotiation)', sessionsV2('legacy'), { sessions: true }],
  ['2026-07-28 (stateless, SDK v2 client pinned to the modern era)', modern, { sessions: false }],
];
// The approval and replica-kill cases: one client of each era's kind (sessions, stateless).
const KINDS: [string, SessionFactory][] = [
  ['2025-11-25 client (sessions)', sessions2025],
  ['2026-07-28 client (stateless)', modern],
];
const REPLICAS = ['r1', 'r2', 'r3'];
const IDEMPOTENCY_KEY = 'tool-envelope/idempotency-key';

interface Envelope {
  status: string;
  tool_call_id: string;
  // The upstream's structured result (ContextOS `output`): scale-upstream puts its pid there.
  output?: { id?: string; pid?: number; dropped?: string };
  metadata?: { approvalId?: string; replay?: boolean };
}

function envelopeOf(r: { structuredContent?: unknown }): Envelope {
  expect(oracleValidate('contextos', r.structuredContent).errors).toEqual([]);
  return r.structuredContent as Envelope;
}

describe('--replica-id', () => {
  it('tags each session id with the replica name, after a dot', () => {
    const next = replicaSessionId('r-7');
    const [a, b] = [next(), next()];
    expect(a).toMatch(/^r-7\.[0-9a-f-]{36}$/);
    expect(b).not.toBe(a);
  });

  it.each([
    [['--replica-id', 'r1', '--', 'node', 'x.js'], /--replica-id applies to --http/],
    [['--http', '0', '--replica-id', 'r.1', '--', 'node', 'x.js'], /--replica-id: a replica id is 1-32 letters, digits or '-'/],
    [['--http', '0', '--replica-id', '', '--', 'node', 'x.js'], /--replica-id: a replica id is/],
  ])('%j is a usage error', async (args, message) => {
    const r = await runVerb(gatewayVerb, args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });
});

describePg('scale-out: gateway replicas on one PostgreSQL store', (serverUrl) =>
  describeNeeding('nginx', 'behind nginx', (nginxBin) => scaleOut(serverUrl, nginxBin)),
);

/** The replicas' cases, on the test server at `serverUrl` behind the nginx at `nginxBin`. */
function scaleOut(serverUrl: string, nginxBin: string): void {
  const dir = mkdtempSync(join(tmpdir(), 'te-scale-'));
  const countFile = join(dir, 'executions.log');
  const tokensFile = join(dir, 'tokens.yaml');
  const token = randomBytes(24).toString('base64url');
  // The operator key every replica and the approver's CLI share (docs/deploy.md).
  const env = { TOOL_ENVELOPE_KEY: randomBytes(32).toString('hex'), XDG_CONFIG_HOME: join(dir, 'config') };
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let replicas: Replica[] = [];
  let nginx: Nginx | undefined;
  const upstreamPids: number[] = [];
  const open: McpSession[] = [];

  const executions = (tool: string, id: string): string[] =>
    readFileSync(countFile, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith(`${tool} ${id} `));
  const query = async <T extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<T[]> => {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      return (await c.query<T>(sql, params)).rows;
    } finally {
      await c.end();
    }
  };
  // The CLI as an operator runs it, with the shared operator key (the approver: the OS user).
  const cli = (args: string[]): Promise<{ code: number | null; out: string }> =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
      child.once('exit', (code) => resolve({ code, out }));
    });
  const replicaOfPort = (addr: string): string | undefined => replicas.find((r) => addr === `127.0.0.1:${r.port}`)?.name;
  // The replica whose upstream ran a call (each replica has its own upstream process, which puts its
  // pid in the result), from the pids taken at start (a killed replica has no children left to list).
  const upstreamOf = new Map<number, string>();
  const replicaOfPid = (pid: number | undefined): string | undefined => (pid === undefined ? undefined : upstreamOf.get(pid));

  beforeAll(async () => {
    if (!existsSync(MAIN)) execFileSync('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'ignore' });
    writeFileSync(countFile, '');
    writeFileSync(tokensFile, `tokens:\n  - sha256: ${createHash('sha256').update(token).digest('hex')}\n    principal: user:alice\n`);
    db = await freshDatabase(serverUrl);
    // With the console, behind nginx as docs/deploy.md says (nginx is 127.0.0.1 to them).
    const args = ['--console', '--trust-proxy', '127.0.0.1/32'];
    replicas = await Promise.all(REPLICAS.map((name) => startReplica({ name, storeUrl: db.url, tokensFile, countFile, env, args })));
    for (const r of replicas) {
      const pid = r.upstreamPid();
      if (pid) {
        upstreamPids.push(pid);
        upstreamOf.set(pid, r.name);
      }
    }
    // A free port is bound by nginx only a moment after it was found: if another process took it meanwhile, try another.
    for (let attempt = 1; !nginx; attempt++) {
      const port = await freePort();
      const site = nginxSiteFromDoc(
        replicas.map((r) => r.port),
        port,
      );
      nginx = await startNginx(nginxBin, join(dir, `nginx-${attempt}`), site, port).catch((err: Error) => {
        if (attempt === 3 || !/Address already in use/.test(err.message)) throw err;
        return undefined;
      });
    }
  });

  afterAll(async () => {
    await Promise.all(open.map((s) => s.close()));
    await nginx?.stop();
    await Promise.all(replicas.map((r) => stopProcess(r.process)));
    // An upstream left behind by the killed replica: ended by its pid, if that pid is still it.
    for (const pid of upstreamPids) {
      try {
        if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('scale-upstream.mjs')) process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await db?.drop();
  });

  describe.each(ERAS)('%s', (_era, connect, traits) => {
    const session = async (): Promise<McpSession> => {
      const s = await connect(nginx!.url, token);
      open.push(s);
      return s;
    };

    if (traits.sessions)
      it('routes each session back to the replica that holds it, and spreads new sessions round-robin', async () => {
        const sessions = await Promise.all(Array.from({ length: 6 }, () => session()));
        const tags = sessions.map((s) => s.id?.split('.')[0]);
        expect(new Set(tags)).toEqual(new Set(REPLICAS));
        const before = nginx!.log().length;
        for (let round = 0; round < 3; round++) {
          const results = await Promise.all(sessions.map((s, i) => s.call('record', { id: `sticky-${i}-${round}` })));
          for (const r of results) expect(envelopeOf(r).status).toBe('ok');
        }
        // Every request that carried a session id went to the replica named in it.
        const withSession = (lines: NginxLogLine[]): NginxLogLine[] => lines.filter((l) => l.session !== '-');
        const routed = withSession(await nginx!.logSince(before, (lines) => withSession(lines).length >= 18));
        expect(routed.length).toBeGreaterThanOrEqual(18);
        for (const l of routed) expect(replicaOfPort(l.upstream)).toBe(l.session.split('.')[0]);
        // A session id that names no replica reaches one, which knows no such session.
        const res = await fetch(nginx!.url, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-session-id': 'r9.forged',
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        });
        expect(res.status).toBe(404);
      });

    if (!traits.sessions)
      it('serves the calls of one client on every replica: no session, no stickiness, one audit log', async () => {
        const s = await session();
        expect(s.id).toBeUndefined();
        const before = nginx!.log().length;
        const envelopes: Envelope[] = [];
        for (let i = 0; i < 9; i++) envelopes.push(envelopeOf(await s.call('record', { id: `stateless-${randomBytes(3).toString('hex')}-${i}` })));
        for (const e of envelopes) expect(e.status).toBe('ok');
        // Each call ran on the upstream of the replica that served it: one client, three replicas.
        expect(new Set(envelopes.map((e) => replicaOfPid(e.output?.pid)))).toEqual(new Set(REPLICAS));
        const posts = (lines: NginxLogLine[]): NginxLogLine[] => lines.filter((l) => l.method === 'POST');
        const calls = posts(await nginx!.logSince(before, (lines) => posts(lines).length >= 9));
        expect(calls.every((l) => l.session === '-')).toBe(true);
        expect(new Set(calls.map((l) => replicaOfPort(l.upstream)))).toEqual(new Set(REPLICAS));
        const rows = await query<{ tool_call_id: string }>('SELECT tool_call_id FROM audit WHERE tool_call_id = ANY($1)', [
          envelopes.map((e) => e.tool_call_id),
        ]);
        expect(new Set(rows.map((r) => r.tool_call_id))).toEqual(new Set(envelopes.map((e) => e.tool_call_id)));
      });

    it('runs a tool once for 100 concurrent duplicates of one idempotency key spread over the replicas', async () => {
      const key = `order-${randomBytes(4).toString('hex')}`;
      const sessions = await Promise.all(Array.from({ length: 25 }, () => session()));
      const before = nginx!.log().length;
      const results = await Promise.all(
        sessions.flatMap((s) => Array.from({ length: 4 }, () => s.call('record', { id: key, delayMs: 400 }, { [IDEMPOTENCY_KEY]: key }))),
      );
      expect(results).toHaveLength(100);
      const envelopes = results.map(envelopeOf);
      for (const e of envelopes) expect(e.status).toBe('ok');
      expect(executions('record', key)).toHaveLength(1);
      // One execution's result, replayed to the 99 others.
      expect(new Set(envelopes.map((e) => JSON.stringify(e.output)))).toHaveProperty('size', 1);
      expect(envelopes[0]!.output?.id).toBe(key);
      expect(envelopes.filter((e) => e.metadata?.replay === true)).toHaveLength(99);
      // The calls did reach every replica: the sessions are spread (each answered by its own replica,
      // as the routing case shows) and nginx sent requests to all three.
      if (traits.sessions) expect(new Set(sessions.map((x) => x.id?.split('.')[0]))).toEqual(new Set(REPLICAS));
      const posts = (lines: NginxLogLine[]): NginxLogLine[] => lines.filter((l) => l.method === 'POST');
      const calls = posts(await nginx!.logSince(before, (lines) => posts(lines).length >= 100));
      expect(new Set(calls.map((l) => replicaOfPort(l.upstream)))).toEqual(new Set(REPLICAS));
    });
  });

  // The CLI releases, the replicas poll: a paused call of a session or of a stateless client alike.
  it.each(KINDS)('runs an approval released from the CLI exactly once, although every replica polls for it (%s)', async (_kind, connect) => {
    const s = await connect(nginx!.url, token);
    open.push(s);
    const names = Array.from({ length: 4 }, (_, i) => `t${i}-${randomBytes(3).toString('hex')}`);
    const paused = (await Promise.all(names.map((name) => s.call('drop_table', { name })))).map(envelopeOf);
    const ids = paused.map((e) => e.metadata?.approvalId);
    for (const [i, e] of paused.entries()) {
      expect(e.status).toBe('paused');
      expect(ids[i]).toMatch(/^apr_/);
      expect(executions('drop_table', names[i]!)).toHaveLength(0);
    }
    // Released together, from the CLI as an operator would (approver: the OS user).
    const outs = await Promise.all(ids.map((id) => cli(['audit', 'approvals', 'approve', id!, '--store', db.url, '--wait', '20', '--format', 'json'])));
    for (const o of outs) expect(o.code, o.out).toBe(0);
    for (const name of names) expect(executions('drop_table', name)).toHaveLength(1);
    const rows = await query<{ id: string; state: string }>('SELECT id, state FROM approvals WHERE id = ANY($1)', [ids]);
    expect(rows.map((r) => r.state)).toEqual(ids.map(() => 'completed'));
    // Each run is in the audit log once, as completed (beside the record of its pause).
    const audited = await query<{ approval_id: string }>("SELECT approval_id FROM audit WHERE approval_id = ANY($1) AND status = 'completed'", [ids]);
    expect(audited.map((r) => r.approval_id).sort()).toEqual([...ids].sort());
    // Poll a little longer: no replica runs any of them a second time.
    await new Promise((r) => setTimeout(r, 300));
    for (const name of names) expect(executions('drop_table', name)).toHaveLength(1);
  });

  it("counts the console's failed sign-ins per client nginx names (--trust-proxy), across the replicas: one client's failures lock out that client only", async () => {
    // The clients are 127.0.0.3 and 127.0.0.4, outside the trusted 127.0.0.1/32 as clients elsewhere are;
    // what they claim in X-Forwarded-For is left of what nginx appends, and ignored.
    for (let i = 1; i <= 5; i++) expect(await consoleSignInFrom('127.0.0.3', nginx!.port, `guess-${i}`, `203.0.113.${i}`)).toBe(401);
    expect(await consoleSignInFrom('127.0.0.3', nginx!.port, `guess-6`, '203.0.113.99')).toBe(429);
    // Another client is checked (401: a wrong token), not refused; so is what 127.0.0.3 claimed to be.
    expect(await consoleSignInFrom('127.0.0.4', nginx!.port, 'guess-7', '127.0.0.3')).toBe(401);
    const rows = await query<{ address: string; failures: number }>('SELECT address, failures FROM console_sign_in_failures ORDER BY address');
    expect(rows).toEqual([
      { address: '127.0.0.3', failures: 5 },
      { address: '127.0.0.4', failures: 1 },
    ]);
  });

  // Last: it kills a replica, under load from clients of both kinds at once (one kill for both).
  it('keeps serving through nginx when a replica is SIGKILLed mid-load, and the log holds every answered call (sessions and stateless clients)', async () => {
    const victim = replicas[1]!;
    type Kind = (typeof KINDS)[number][0];
    const answered: { toolCallId: string; kind: Kind; replica: string | undefined; ranOn: string | undefined; at: number }[] = [];
    const errors: { kind: Kind; replica: string | undefined; message: string; at: number }[] = [];
    let stop = false;
    let killedAt = Number.POSITIVE_INFINITY;
    let seq = 0;
    const reconnect = async (kind: Kind, connect: SessionFactory): Promise<McpSession> => {
      for (let attempt = 1; ; attempt++) {
        try {
          const s = await connect(nginx!.url, token);
          open.push(s);
          return s;
        } catch (err) {
          // Counted (and failing the test below): nginx must never send a new session to the dead replica.
          errors.push({ kind, replica: undefined, message: `connect: ${(err as Error).message}`, at: Date.now() });
          if (attempt === 3) throw err;
        }
      }
    };
    // A call paused on a session the victim holds, released after the kill: another replica runs it.
    let held = await sessions2025(nginx!.url, token);
    open.push(held);
    for (let i = 0; i < 6 && !held.id?.startsWith(`${victim.name}.`); i++) {
      held = await sessions2025(nginx!.url, token);
      open.push(held);
    }
    expect(held.id?.startsWith(`${victim.name}.`)).toBe(true);
    const table = `orphan-${randomBytes(3).toString('hex')}`;
    const pausedOnVictim = envelopeOf(await held.call('drop_table', { name: table }));
    expect(pausedOnVictim.status).toBe('paused');
    const worker = async ([kind, connect]: (typeof KINDS)[number]): Promise<void> => {
      let s = await reconnect(kind, connect);
      while (!stop) {
        // A session's replica is named in its id; a stateless client's next call may land on any.
        const replica = s.id?.split('.')[0];
        let r: Awaited<ReturnType<McpSession['call']>>;
        try {
          r = await s.call('record', { id: `load-${seq++}`, delayMs: 10 });
        } catch (err) {
          // The replica is gone: a new session through nginx (the documented client retry).
          errors.push({ kind, replica, message: (err as Error).message, at: Date.now() });
          await s.close();
          s = await reconnect(kind, connect);
          continue;
        }
        const e = envelopeOf(r);
        expect(e.status).toBe('ok');
        answered.push({ toolCallId: e.tool_call_id, kind, replica, ranOn: replicaOfPid(e.output?.pid), at: Date.now() });
      }
    };
    const workers = KINDS.flatMap((k) => Array.from({ length: 5 }, () => worker(k)));
    // Load on every replica from both kinds first (the victim's sessions included), then the kill.
    const loaded = Date.now() + 20_000;
    const onEvery = (): boolean => KINDS.every(([kind]) => REPLICAS.every((n) => answered.filter((a) => a.kind === kind && a.ranOn === n).length >= 3));
    while (!onEvery() && Date.now() < loaded) await new Promise((r) => setTimeout(r, 50));
    killedAt = Date.now();
    victim.process.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 3_000));
    stop = true;
    await Promise.all(workers);

    // Each call ran on the replica that answered it (a session's own; a stateless call's, from its upstream's pid).
    for (const a of answered) if (a.replica !== undefined) expect(a.ranOn).toBe(a.replica);
    for (const [kind] of KINDS) {
      expect(answered.some((a) => a.kind === kind && a.ranOn === victim.name && a.at < killedAt)).toBe(true);
      const after = answered.filter((a) => a.kind === kind && a.at > killedAt + 500);
      expect(after.length).toBeGreaterThan(12);
      expect(after.every((a) => a.ranOn !== victim.name)).toBe(true);
      expect(new Set(after.map((a) => a.ranOn))).toEqual(new Set(REPLICAS.filter((n) => n !== victim.name)));
    }
    // A stateless client loses at most the call it had in flight on the victim when it died: nginx
    // skips the dead replica for every request after (a refused connection goes to the next one).
    const stateless = errors.filter((e) => e.kind === KINDS[1]![0]);
    expect(stateless.length).toBeLessThanOrEqual(5);
    for (const e of stateless) expect(e.at - killedAt).toBeLessThan(2_000);
    const errors2025 = errors.filter((e) => e.kind === KINDS[0]![0]);
    // Only the dead replica's sessions saw errors; the others kept answering throughout.
    expect(errors2025.length).toBeGreaterThan(0);
    for (const e of errors2025) expect(e.replica).toBe(victim.name);
    // Every call whose answer reached the client is in the audit log.
    const ids = answered.map((a) => a.toolCallId);
    const rows = await query<{ tool_call_id: string }>('SELECT tool_call_id FROM audit WHERE tool_call_id = ANY($1)', [ids]);
    expect(new Set(rows.map((r) => r.tool_call_id))).toEqual(new Set(ids));
    // The call paused on the dead replica, released now, runs once on a live one.
    const released = await cli(['audit', 'approvals', 'approve', pausedOnVictim.metadata!.approvalId!, '--store', db.url, '--wait', '20']);
    expect(released.code, released.out).toBe(0);
    const ran = executions('drop_table', table);
    expect(ran).toHaveLength(1);
    const livePids = replicas.filter((r) => r !== victim).map((r) => r.upstreamPid());
    expect(livePids).toContain(Number(ran[0]!.split(' ')[2]));
    // And the log the three writers kept, the killed one included, verifies.
    const verify = await cli(['audit', 'verify', '--store', db.url, '--format', 'json']);
    expect(verify.code, verify.out).toBe(0);
  });
}
