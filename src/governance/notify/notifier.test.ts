// The delivery queue against a real node:http receiver started here: the bounds (a full queue drops
// its oldest, logged), the retries (503 retried with doubling waits, 400 not), the per-attempt timeout.
import { createServer, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { ApprovalEvent } from '../approval-events.js';
import { Notifier, type NotifyLog } from './notifier.js';

function event(n: number): ApprovalEvent {
  return {
    event: 'requested',
    approvalId: `apr_${n}`,
    tool: 't',
    principalChain: [{ kind: 'user', id: 'u' }],
    args: {},
    rule: null,
    reason: 'r',
    expiresAt: null,
    decidedBy: null,
    status: null,
    at: 0,
  };
}

type Line = { level: string; msg: string; fields: Record<string, unknown> };

function recorder(): { log: NotifyLog; lines: Line[] } {
  const lines: Line[] = [];
  return { lines, log: (level, msg, fields) => lines.push({ level, msg, fields }) };
}

/** A receiver answering each request by `answer(n)` (n from 0): a status, or 'hold' to keep it waiting. */
async function receiver(answer: (n: number) => number | 'hold') {
  const got: string[] = [];
  const held: ServerResponse[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const a = answer(got.length);
      got.push((JSON.parse(body) as { approvalId: string }).approvalId);
      if (a === 'hold') held.push(res);
      else res.writeHead(a).end();
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/h`;
  const close = () => new Promise<void>((done) => (server.closeAllConnections(), server.close(() => done())));
  const release = (): void => {
    for (const res of held.splice(0)) res.writeHead(200).end();
  };
  return { url, got, release, close };
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 300 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
  expect(check()).toBe(true);
}

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closing.splice(0)) await c();
});

describe('Notifier', () => {
  it('a full queue drops its oldest delivery, with a warning; the rest arrive in order', async () => {
    const r = await receiver((n) => (n === 0 ? 'hold' : 200));
    closing.push(r.close);
    const { log, lines } = recorder();
    const notifier = new Notifier([{ url: r.url, format: 'json' }], { log, maxQueue: 2, concurrency: 1 });
    for (const n of [1, 2, 3, 4]) notifier.send(event(n));
    await until(() => r.got.length === 1);
    // apr_1 is in flight; apr_2, apr_3 queued; apr_4 pushed apr_2 out.
    expect(lines.filter((l) => l.msg === 'notify dropped').map((l) => l.fields.approvalId)).toEqual(['apr_2']);
    expect(lines.find((l) => l.msg === 'notify dropped')).toMatchObject({ level: 'warn', fields: { reason: 'queue full (2)' } });
    r.release();
    await until(() => r.got.length === 3);
    expect(r.got).toEqual(['apr_1', 'apr_3', 'apr_4']);
    await notifier.close();
  });

  it('retries a 503 with doubling waits until it is delivered; a 400 is not retried; an answer later than the timeout is retried', async () => {
    const r = await receiver((n) => (n < 2 ? 503 : 200));
    closing.push(r.close);
    const { log, lines } = recorder();
    const notifier = new Notifier([{ url: r.url, format: 'json' }], { log, baseDelayMs: 10 });
    notifier.send(event(1));
    await until(() => lines.some((l) => l.msg === 'notify delivered'));
    expect(lines.map((l) => [l.level, l.msg, l.fields.attempt, l.fields.retryInMs ?? l.fields.httpStatus])).toEqual([
      ['warn', 'notify failed', 1, 10],
      ['warn', 'notify failed', 2, 20],
      ['info', 'notify delivered', 3, 200],
    ]);
    await notifier.close();

    const bad = await receiver(() => 400);
    closing.push(bad.close);
    const refused = recorder();
    const once = new Notifier([{ url: bad.url, format: 'json' }], { log: refused.log, baseDelayMs: 10 });
    once.send(event(2));
    await until(() => refused.lines.length > 0);
    await once.close();
    expect(refused.lines).toEqual([
      expect.objectContaining({ level: 'error', msg: 'notify failed', fields: expect.objectContaining({ error: 'HTTP 400', final: 'not retried' }) }),
    ]);
    expect(bad.got).toEqual(['apr_2']);

    const slow = await receiver((n) => (n === 0 ? 'hold' : 200));
    closing.push(slow.close);
    const late = recorder();
    const timed = new Notifier([{ url: slow.url, format: 'json' }], { log: late.log, baseDelayMs: 10, timeoutMs: 200 });
    timed.send(event(3));
    await until(() => late.lines.some((l) => l.msg === 'notify delivered'));
    expect(late.lines[0]).toMatchObject({ level: 'warn', msg: 'notify failed', fields: { error: 'no answer within 200 ms', attempt: 1 } });
    expect(slow.got).toEqual(['apr_3', 'apr_3']);
    slow.release();
    await timed.close();
  });
});
