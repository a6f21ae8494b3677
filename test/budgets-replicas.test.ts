import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describePg } from '../src/store/test-support/pg.js';
import { freshDatabase, type McpSession, type Replica, replicaFiles, startReplica, stopProcess } from './scale-out-support.js';

interface Envelope {
  status: string;
  output?: { id?: string; pid?: number };
  metadata?: { error?: { code?: string; retry_after_ms?: number; retryable?: boolean } };
}

const EXACT = 12;
const WINDOW_MS = 6000;

describePg('budgets shared by three gateway replicas on one PostgreSQL store', (serverUrl) => {
  const { dir, countFile, tokensFile, policyFile, token, env, connect, envelope, ran, write } = replicaFiles<Envelope>('te-budget-replicas-');
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let replicas: Replica[] = [];
  const open: McpSession[] = [];

  beforeAll(async () => {
    // A window no run of the test crosses the end of (1e12 ms, aligned to the epoch: 2001 to 2033), and a short one.
    write(
      `version: 1
rules:
  - name: exact
    match: { tool: record }
    when: args.id.startsWith("exact-")
    effect: allow
    rateBudget: { calls: ${EXACT}, perMs: 1000000000000, scope: [principal, tool] }
  - name: window
    match: { tool: record }
    when: args.id.startsWith("window-")
    effect: allow
    rateBudget: { calls: 2, perMs: ${WINDOW_MS}, scope: principal }
  - name: rest
    effect: allow
`,
    );
    db = await freshDatabase(serverUrl);
    replicas = await Promise.all(
      ['b1', 'b2', 'b3'].map((name) => startReplica({ name, storeUrl: db.url, tokensFile, countFile, env, args: ['--policy', policyFile] })),
    );
  });

  afterAll(async () => {
    await Promise.all(open.map((s) => s.close()));
    await Promise.all(replicas.map((r) => stopProcess(r.process)));
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const clients = async (): Promise<McpSession[]> => {
    const made = await Promise.all(replicas.map((r) => connect(`http://127.0.0.1:${r.port}/mcp`, token)));
    open.push(...made);
    return made;
  };

  it(`N+k concurrent calls spread over the three replicas: exactly N = ${EXACT} run`, async () => {
    const cs = await clients();
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => (cs[i % 3] as McpSession).call('record', { id: `exact-${i}` })));
    const envelopes = results.map(envelope);
    const ok = envelopes.filter((e) => e.status === 'ok');
    expect(ok).toHaveLength(EXACT);
    expect(ran('exact-')).toHaveLength(EXACT);
    // Each replica's upstream ran some: the budget is one across them, not one each.
    expect(new Set(ok.map((e) => e.output?.pid)).size).toBeGreaterThan(1);
    const refused = envelopes.filter((e) => e.status !== 'ok');
    expect(refused).toHaveLength(30 - EXACT);
    for (const e of refused) {
      expect(e.status).toBe('blocked');
      expect(e.metadata?.error).toMatchObject({ code: 'budget-exhausted', retryable: true });
      expect(e.metadata?.error?.retry_after_ms).toBeGreaterThan(0);
    }
    // Calls the budget does not cover still run.
    expect(envelope(await (cs[0] as McpSession).call('record', { id: 'other-1' })).status).toBe('ok');
  });

  it('the budget starts over at its window: after the hinted wait, a call runs again', async () => {
    const cs = await clients();
    // Start at the beginning of a window, so the three calls below fall in one.
    const intoWindow = Date.now() % WINDOW_MS;
    if (intoWindow > WINDOW_MS / 3) await sleep(WINDOW_MS - intoWindow + 20);
    const first = await Promise.all([0, 1, 2].map((i) => (cs[i] as McpSession).call('record', { id: `window-a${i}` })));
    const statuses = first.map((r) => envelope(r).status).sort();
    expect(statuses).toEqual(['blocked', 'ok', 'ok']);
    const hint = first.map(envelope).find((e) => e.status === 'blocked')?.metadata?.error?.retry_after_ms as number;
    expect(hint).toBeGreaterThan(0);
    expect(hint).toBeLessThanOrEqual(WINDOW_MS);
    await sleep(hint + 20);
    expect(envelope(await (cs[2] as McpSession).call('record', { id: 'window-b' })).status).toBe('ok');
    expect(ran('window-')).toHaveLength(3);
  });
});
