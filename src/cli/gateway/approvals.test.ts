// Approval notifications and the run window through the real `tool-envelope gateway` verb (#37
// points 3-5): the verb run in-process over HTTP in front of counting-server.mjs (it logs every
// execution to a file), a real SQLite file, the SDK's client, the CLI's approval verb in-process,
// and webhook receivers that are node:http servers started here (one signed JSON, one Slack).
import { createHmac } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { freePort } from '../../../test/scale-out-support.js';
import { executions } from '../../mcp/test-support/count-file.js';
import { httpClient, repoRoot, tempDir } from '../../mcp/test-support/harness.js';
import { openStore } from '../../store/index.js';
import * as audit from '../audit.js';
import { run } from '../gateway.js';
import { memoryIo } from '../test-support/memory-io.js';
import { eventually, startGateway, type ObservedGateway } from '../test-support/observed-gateway.js';
import { runVerb } from '../test-support/run-verb.js';

const COUNTING = join(repoRoot, 'src/mcp/test-support/counting-server.mjs');
const SECRET = 'hook-secret-for-the-test';
/** Values the audit log redacts: a `password` argument and a `?token=` query string. */
const PASSWORD = 'hunter2-never-sent';
const TOKEN = 'tok-never-sent-7f3a';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A webhook receiver: keeps every request; `hold` keeps answers back until `release()`. */
async function receiver(port = 0): Promise<{ url: string; got: Received[]; hold: boolean; release: () => void; close: () => Promise<void>; server: Server }> {
  const held: ServerResponse[] = [];
  const r = {
    url: '',
    got: [] as Received[],
    hold: false,
    release: () => {
      for (const res of held.splice(0)) res.end('ok');
    },
    close: () => new Promise<void>((done) => (r.server.closeAllConnections(), r.server.close(() => done()))),
    server: createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => (body += d));
      req.on('end', () => {
        r.got.push({ path: req.url ?? '', headers: req.headers, body });
        if (r.hold) held.push(res);
        else res.end('ok');
      });
    }),
  };
  await new Promise<void>((ok) => r.server.listen(port, '127.0.0.1', ok));
  r.url = `http://127.0.0.1:${(r.server.address() as { port: number }).port}`;
  return r;
}

const deletions = (file: string): unknown[] => executions(file, 'delete_item');

/** The flags every gateway here starts with: HTTP, ContextOS envelopes, the config file, the store, and user:alice as the verified caller. */
const served = (cfg: string, db: string): string[] => ['--http', '0', '--dialect', 'contextos', '--config', cfg, '--store', db, '--principal', 'user:alice'];

/** A config file: the counting upstream, and the given notify entries. */
function config(dir: string, count: string, notify: unknown[]): string {
  const file = join(dir, `gateway-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify({ upstreams: [{ name: 'counting', command: process.execPath, args: [COUNTING], env: { COUNT_FILE: count } }], notify }));
  return file;
}

async function callDelete(url: string, args: Record<string, unknown>): Promise<{ status: string; approvalId: unknown; code: unknown }> {
  const { client } = await httpClient(url);
  try {
    const r = (await client.callTool({ name: 'delete_item', arguments: args })) as CallToolResult;
    // A ContextOS result carries the structured error fields in metadata.error.
    const env = r.structuredContent as { status: string; metadata?: { approvalId?: unknown; error?: { code?: string } } };
    return { status: env.status, approvalId: env.metadata?.approvalId, code: env.metadata?.error?.code };
  } finally {
    await client.close();
  }
}

const json = (r: Received): Record<string, unknown> => JSON.parse(r.body) as Record<string, unknown>;
const events = (rs: Received[]): unknown[] => rs.map((r) => json(r).event);

const running: ObservedGateway[] = [];
const receivers: Awaited<ReturnType<typeof receiver>>[] = [];

/** A receiver closed after the test. */
async function listening(port?: number): Promise<Awaited<ReturnType<typeof receiver>>> {
  const r = await receiver(port);
  receivers.push(r);
  return r;
}

/** A fresh directory, with where the store and the upstream's count file go. */
function place(): { dir: string; db: string; count: string } {
  const dir = tempDir();
  return { dir, db: join(dir, 'audit.db'), count: join(dir, 'count.jsonl') };
}
afterEach(async () => {
  for (const g of running.splice(0)) await g.stop();
  for (const r of receivers.splice(0)) await r.close();
});
afterAll(async () => {
  for (const g of running) await g.stop();
});

describe('approval notifications (tool-envelope gateway --notify / notify:)', () => {
  it('a signed JSON receiver and a Slack receiver get requested, approved and run; no redacted value leaves; the log has one info line per event', async () => {
    const { dir, db, count } = place();
    const secretFile = join(dir, 'hook.secret');
    writeFileSync(secretFile, `${SECRET}\n`, { mode: 0o600 });
    const hook = await listening();
    const slack = await listening();
    const cfg = config(dir, count, [
      { url: `${hook.url}/hook`, format: 'json', secretFile },
      { url: `${slack.url}/slack`, format: 'slack' },
    ]);
    const g = await startGateway(
      [...served(cfg, db), '--approval-poll', '50', '--console-url', 'https://gw.example/console/', '--log-format', 'json'],
      {},
      dir,
    );
    running.push(g);

    const paused = await callDelete(g.url, { id: `https://files.example/report?token=${TOKEN}`, password: PASSWORD });
    expect(paused.status).toBe('paused');
    const id = paused.approvalId as string;
    const cli = await runVerb(audit, ['approvals', 'approve', id, '--store', db, '--wait', '30']);
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    expect(deletions(count)).toHaveLength(1);

    await eventually(async () => (hook.got.length >= 3 && slack.got.length >= 3 ? true : undefined), 'three notifications each');
    expect(events(hook.got)).toEqual(['approval.requested', 'approval.approved', 'approval.run']);
    for (const r of hook.got) {
      // The signature is the HMAC of the exact body bytes, with the secret file's text.
      expect(r.headers['x-tool-envelope-signature']).toBe(`sha256=${createHmac('sha256', SECRET).update(r.body).digest('hex')}`);
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.path).toBe('/hook');
    }
    const [requested, approved, ran] = hook.got.map(json);
    expect(requested).toMatchObject({
      approvalId: id,
      tool: 'delete_item',
      principalChain: [
        { kind: 'user', id: 'alice' },
        { kind: 'agent', id: 'http-test' },
      ],
      decidedBy: null,
      link: `https://gw.example/console/inbox#${id}`,
    });
    expect(typeof requested!.expiresAt).toBe('string');
    expect((requested!.args as Record<string, unknown>).password).toBe('[REDACTED]');
    expect(approved).toMatchObject({ approvalId: id, decidedBy: expect.stringMatching(/^user:/) });
    expect(ran).toMatchObject({ approvalId: id, status: 'completed' });
    // No delivery to either receiver carries a redacted value, in any form.
    for (const r of [...hook.got, ...slack.got]) {
      expect(r.body).not.toContain(PASSWORD);
      expect(r.body).not.toContain(TOKEN);
    }

    // The Slack body: text plus blocks, no signature without a secret.
    expect(slack.got[0]!.headers['x-tool-envelope-signature']).toBeUndefined();
    const s = json(slack.got[0]!) as { text: string; blocks: { type: string; text?: { type: string; text: string }; elements?: { text: string }[] }[] };
    expect(s.text).toContain('Approval requested: delete_item for user:alice');
    expect(s.blocks[0]).toMatchObject({ type: 'section', text: { type: 'mrkdwn' } });
    expect(s.blocks.at(-1)).toMatchObject({ type: 'context' });
    expect(s.blocks.at(-1)!.elements![0]!.text).toBe(`<https://gw.example/console/inbox#${id}|Open in the console>`);

    // One info line per event with stable fields, and every delivery attempt's outcome.
    const lines = g
      .stderr()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const approvals = lines.filter((l) => l.component === 'approvals' && l.approvalId === id);
    expect(approvals.map((l) => [l.level, l.event])).toEqual([
      ['info', 'requested'],
      ['info', 'approved'],
      ['info', 'run'],
    ]);
    expect(approvals[0]).toMatchObject({ msg: 'approval requested', tool: 'delete_item', principal: 'user:alice' });
    expect(approvals[2]).toMatchObject({ status: 'completed' });
    const delivered = lines.filter((l) => l.component === 'notify' && l.msg === 'notify delivered');
    expect(delivered).toHaveLength(6);
    expect(g.stderr()).not.toContain(PASSWORD);
  });

  it('a receiver that is down, and one that answers late, delay no call and lose no notification', async () => {
    const { dir, db, count } = place();
    const downPort = await freePort();
    const slow = await listening();
    slow.hold = true;
    const cfg = config(dir, count, [{ url: `http://127.0.0.1:${downPort}/hook` }, { url: `${slow.url}/hook` }]);
    const g = await startGateway([...served(cfg, db)], {}, dir);
    running.push(g);

    // The call answers while the slow receiver still holds its request and the other refuses connections.
    const paused = await callDelete(g.url, { id: 'a' });
    expect(paused.status).toBe('paused');
    const again = await callDelete(g.url, { id: 'b' });
    expect(again.status).toBe('paused');
    await eventually(async () => (slow.got.length >= 2 ? true : undefined), 'the slow receiver got both');
    await eventually(async () => (/notify failed[^\n]*error=ECONNREFUSED[^\n]*retryInMs=/.test(g.stderr()) ? true : undefined), 'a refused attempt logged');
    slow.release();
    slow.hold = false;

    // The down receiver comes up on its port: the retries deliver both requests.
    const late = await listening(downPort);
    await eventually(async () => (late.got.length >= 2 ? true : undefined), 'the retries reached the receiver once it was up');
    expect(late.got.map((r) => json(r).approvalId).sort()).toEqual([paused.approvalId, again.approvalId].sort());
    expect(slow.got.map((r) => json(r).approvalId).sort()).toEqual([paused.approvalId, again.approvalId].sort());
    await eventually(async () => ((g.stderr().match(/notify delivered/g) ?? []).length >= 4 ? true : undefined), 'four deliveries logged');
    expect(g.stderr()).toMatch(
      /notify delivered event=requested approvalId=apr_\S+ tool=delete_item target=0 host=127\.0\.0\.1:\d+ deliveryId=ntf_\S+ attempt=[2-9]/,
    );
  });

  it('a rejection made by the CLI is told once by the gateways serving the store, two replicas included', async () => {
    const { dir, db, count } = place();
    const hook = await listening();
    const cfg = config(dir, count, [{ url: `${hook.url}/hook` }]);
    const replicas = [
      await startGateway([...served(cfg, db), '--approval-poll', '50'], {}, dir),
      await startGateway([...served(cfg, db), '--approval-poll', '50'], {}, dir),
    ];
    running.push(...replicas);
    const rejectedIds: string[] = [];
    for (const id of ['r1', 'r2']) {
      const paused = await callDelete(replicas[0]!.url, { id });
      expect(paused.status).toBe('paused');
      const cli = await runVerb(audit, ['approvals', 'reject', paused.approvalId as string, '--reason', 'not today', '--store', db]);
      expect(cli.code).toBe(0);
      rejectedIds.push(paused.approvalId as string);
      await eventually(
        async () => (hook.got.some((r) => json(r).event === 'approval.rejected' && json(r).approvalId === paused.approvalId) ? true : undefined),
        'the rejection was told',
      );
    }
    // By the time the second rejection is told, both replicas have swept past the first: each was told once.
    for (const id of rejectedIds) {
      const told = hook.got.map(json).filter((b) => b.event === 'approval.rejected' && b.approvalId === id);
      expect(told).toHaveLength(1);
      expect(told[0]).toMatchObject({ decidedBy: expect.stringMatching(/^user:/), status: null });
    }
    const lines = replicas.map((g) => (g.stderr().match(/approval rejected event=rejected/g) ?? []).length);
    expect(lines.reduce((a, b) => a + b, 0)).toBe(2);
    expect(deletions(count)).toEqual([]);
  });
});

describe('the approval flags: usage errors before anything starts', () => {
  it.each([
    [['--notify', 'ftp://hooks.example/x'], /--notify: must be an http\(s\) URL, got ftp:/],
    [['--notify', 'not a url'], /--notify: 'not a url' is not a URL/],
    [['--console-url', 'javascript:alert(1)'], /--console-url: must be an http\(s\) URL/],
    [['--approval-run-window', '0'], /--approval-run-window must be a positive integer, got '0'/],
    [['--approval-run-window', '15m'], /--approval-run-window must be a positive integer, got '15m'/],
  ])('%j', async (flags, message) => {
    const io = memoryIo();
    expect(await run([...flags, '--no-store', '--', 'node', 'x.js'], io)).toBe(2);
    expect(io.err()).toMatch(message);
  });

  it('a notify: secret file that group or others may read, a missing one, or a bad entry, stops the gateway from starting', async () => {
    const { dir, count } = place();
    const loose = join(dir, 'loose.secret');
    writeFileSync(loose, SECRET, { mode: 0o644 });
    chmodSync(loose, 0o644);
    const cases: [unknown[], RegExp][] = [
      [
        [{ url: 'http://127.0.0.1:9/x', secretFile: loose }],
        /notify secret file .*loose\.secret has mode 644; it must not be readable by group or others \(chmod 600/,
      ],
      [[{ url: 'http://127.0.0.1:9/x', secretFile: join(dir, 'absent.secret') }], /cannot read the notify secret file/],
      [[{ url: 'http://127.0.0.1:9/x', format: 'teams' }], /notify\[0\]\.format: must be json or slack/],
      [[{ url: 'http://127.0.0.1:9/x', secret: 'inline' }], /notify\[0\]\.secret: unknown setting/],
    ];
    for (const [notify, message] of cases) {
      const io = memoryIo({}, dir);
      expect(await run(['--config', config(dir, count, notify), '--no-store'], io)).toBe(2);
      expect(io.err()).toMatch(message);
    }
  });
});

describe('the run window (--approval-run-window)', () => {
  it('a request approved while no gateway serves the store, found after the window, expires: nothing runs, and an identical call gets that outcome', async () => {
    const { dir, db, count } = place();
    const hook = await listening();
    const cfg = config(dir, count, [{ url: `${hook.url}/hook` }]);
    const args = [...served(cfg, db), '--approval-poll', '50', '--approval-run-window', '200'];
    const first = await startGateway(args, {}, dir);
    const paused = await callDelete(first.url, { id: 'late' });
    expect(paused.status).toBe('paused');
    await first.stop();

    const cli = await runVerb(audit, ['approvals', 'approve', paused.approvalId as string, '--store', db]);
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    // Past the window with no gateway running.
    await new Promise((r) => setTimeout(r, 400));

    const second = await startGateway(args, {}, dir);
    running.push(second);
    const store = await openStore(db);
    try {
      const expired = await eventually(async () => {
        const a = await store.getApproval(paused.approvalId as string);
        return a?.state === 'expired' ? a : undefined;
      }, 'the stale request expired');
      expect((expired.outcome as { error?: { code?: string } }).error?.code).toBe('approval-expired');
      const records = (await store.listAudit({ tool: 'delete_item' }, { limit: 50 })).records;
      expect(records.some((r) => r.approvalId === paused.approvalId && r.status === 'rejected' && r.errorCode === 'approval-expired')).toBe(true);
    } finally {
      await store.close();
    }
    const joined = await callDelete(second.url, { id: 'late' });
    expect(joined).toMatchObject({ status: 'rejected', approvalId: paused.approvalId, code: 'approval-expired' });
    expect(deletions(count)).toEqual([]);
    await eventually(async () => (events(hook.got).includes('approval.expired') ? true : undefined), 'the expiry was notified');
    expect(hook.got.map(json).find((b) => b.event === 'approval.expired')).toMatchObject({ approvalId: paused.approvalId, status: 'approved' });
    expect(second.stderr()).toMatch(/approval expired event=expired approvalId=apr_\S+ tool=delete_item principal=user:alice/);
  });
});
