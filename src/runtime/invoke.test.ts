import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { toolError } from '../core/model.js';
import { armDeadline, armedDeadlines, disarmDeadline, type DeadlineEntry } from './deadline.js';
import { defineTool } from './define.js';
import type { Invocation } from './events.js';
import { invokeTool } from './invoke.js';
import { createRuntime } from './runtime.js';
import { createSession } from './session.js';
import { expectValidEnvelopes } from './test-support/envelopes.js';

describe('the handler context', () => {
  it('records artifacts, citations, mutations and reports progress', async () => {
    const progress: unknown[] = [];
    const def = defineTool({
      name: 'crawl',
      description: '',
      approvalMode: 'network',
      riskTags: ['egress'],
      handler: async (_a, ctx) => {
        ctx.progress(1, 2, 'page 1');
        ctx.artifact('file:///tmp/out.html');
        ctx.cite({ url: 'https://example.com', at: new Date(0) as unknown as string });
        ctx.mutation('cache/example.com');
        ctx.progress(2, 2);
        return { pages: 2 };
      },
    });
    const runtime = createRuntime({ tools: [def] });
    const events: unknown[] = [];
    runtime.on('invoke:progress', (p) => events.push(p.progress));
    const o = await runtime.invoke('crawl', {}, { onProgress: (p) => progress.push(p) });
    expect(o).toMatchObject({
      status: 'ok',
      artifacts: ['file:///tmp/out.html'],
      citations: [{ url: 'https://example.com', at: '1970-01-01T00:00:00.000Z' }],
      mutations: ['cache/example.com'],
      riskTags: ['egress'],
    });
    expect(o.warnings).toEqual([{ code: 'value-coerced', detail: 'citation /at: Date became string' }]);
    expect(progress).toEqual([
      { toolName: 'crawl', toolCallId: o.toolCallId, progress: 1, total: 2, message: 'page 1' },
      { toolName: 'crawl', toolCallId: o.toolCallId, progress: 2, total: 2 },
    ]);
    expect(events).toEqual([1, 2]);
    const { contextos } = expectValidEnvelopes(o);
    expect(contextos).toMatchObject({ artifacts: ['file:///tmp/out.html'], mutations: ['cache/example.com'], risk_tags: ['egress'] });
  });

  it('exposes ids, the deadline and an AbortSignal aborted with a TimeoutError on the deadline', async () => {
    let seen: { ids: string[]; remaining: number; reason?: unknown } | undefined;
    const def = defineTool({
      name: 'slow',
      description: '',
      timeoutMs: 40,
      handler: (_a, ctx) =>
        new Promise(() => {
          seen = { ids: [ctx.toolName, ctx.toolCallId, ctx.runId, ctx.traceId], remaining: ctx.remainingMs() };
          ctx.signal.addEventListener('abort', () => (seen!.reason = ctx.signal.reason));
        }),
    });
    const o = await invokeTool(def, {}, { ids: { runId: 'run-x' } });
    expect(seen!.ids).toEqual(['slow', o.toolCallId, 'run-x', o.traceId]);
    expect(o.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(o.toolCallId).toMatch(/^[0-9a-f]{32}$/);
    expect(seen!.remaining).toBeGreaterThan(0);
    expect(seen!.remaining).toBeLessThanOrEqual(40);
    expect((seen!.reason as DOMException).name).toBe('TimeoutError');
  });

  it('contributions made after the outcome settled are ignored', async () => {
    let late: (() => void) | undefined;
    const def = defineTool({
      name: 'late',
      description: '',
      timeoutMs: 20,
      handler: (_a, ctx) =>
        new Promise((resolve) => {
          late = () => {
            ctx.warn('late', 'too late');
            ctx.artifact('late');
            resolve({ late: true });
          };
        }),
    });
    const o = await invokeTool(def, {});
    late!();
    await new Promise((r) => setTimeout(r, 5));
    expect(o.warnings).toBeUndefined();
    expect(o.artifacts).toBeUndefined();
    expect(o.error?.code).toBe('deadline-exceeded');
  });

  it('a caller signal that is already aborted yields cancelled without running the handler', async () => {
    let ran = false;
    const def = defineTool({ name: 'a', description: '', handler: async () => (ran = true) });
    const o = await invokeTool(def, {}, { signal: AbortSignal.abort() });
    expect(o.error).toMatchObject({ category: 'timeout', code: 'cancelled' });
    expect(ran).toBe(false);
  });

  it('AbortSignal.timeout() from the caller is a caller-deadline-exceeded timeout', async () => {
    const def = defineTool({ name: 'a', description: '', handler: () => new Promise(() => {}) });
    const o = await invokeTool(def, {}, { signal: AbortSignal.timeout(20) });
    expect(o.error).toMatchObject({ category: 'timeout', code: 'caller-deadline-exceeded' });
  });

  it('timeoutMs 0 means no deadline; a bad timeout is a library error', async () => {
    const def = defineTool({ name: 'a', description: '', timeoutMs: 0, handler: async () => 1 });
    expect(await invokeTool(def, {}, undefined, { defaultTimeoutMs: 1, runId: 'r', events: undefined, includeStack: false, maxWarnings: 5 })).toMatchObject({
      status: 'ok',
      result: 1,
    });
    await expect(invokeTool(def, {}, { timeoutMs: -5 })).rejects.toMatchObject({ code: 'invalid-option' });
  });

  it('rejects a signal that is not an AbortSignal or a session that is not one with invalid-option, running nothing', async () => {
    let ran = 0;
    const def = defineTool({ name: 'p', description: '', handler: async () => ++ran });
    const rt = createRuntime({ tools: [def] });
    const bad = [
      [{ signal: 'x' }, 'signal must be an AbortSignal, got the string "x"'],
      [{ signal: {} }, 'signal must be an AbortSignal, got an object'],
      [{ signal: null }, 'signal must be an AbortSignal, got null'],
      [{ session: 5 }, 'session must be a session (createSession()), got 5'],
      [{ session: { id: 's' } }, 'session must be a session (createSession()), got an object'],
      [{ timeoutMs: '100' }, 'timeoutMs must be a non-negative number, got the string "100"'],
    ] as const;
    for (const [options, message] of bad) {
      await expect(rt.invoke('p', {}, options as never), message).rejects.toMatchObject({ name: 'ToolEnvelopeError', code: 'invalid-option', message });
    }
    expect(ran).toBe(0);
    // The real things still pass.
    const session = createSession();
    expect(await rt.invoke('p', {}, { signal: new AbortController().signal, session })).toMatchObject({ status: 'ok', sessionId: session.id });
  });

  it('returns binary results as MCP content blocks with their MIME type', async () => {
    const png = Buffer.from('89504e470d0a1a0a', 'hex');
    const def = defineTool({
      name: 'shot',
      description: '',
      handler: async (_a, ctx) => ({
        width: 1,
        image: ctx.binary(png, 'image/png'),
        raw: ctx.binary(new Uint8Array([1, 2]).buffer, 'application/pdf', { name: 'a.pdf' }),
      }),
    });
    const o = await invokeTool(def, {});
    expect(o.result).toEqual({
      width: 1,
      image: { contentIndex: 0, mimeType: 'image/png', sizeBytes: 8 },
      raw: { contentIndex: 1, mimeType: 'application/pdf', sizeBytes: 2, name: 'a.pdf' },
    });
    expect(o.content).toEqual([
      { type: 'image', data: png.toString('base64'), mimeType: 'image/png' },
      { type: 'resource', resource: { uri: `tool-envelope://calls/${o.toolCallId}/content/1`, mimeType: 'application/pdf', blob: 'AQI=' } },
    ]);
    const { dw, contextos } = expectValidEnvelopes(o);
    expect(dw.content).toEqual(o.content);
    expect(contextos.metadata?.content).toEqual(o.content);

    const audio = defineTool({ name: 'say', description: '', handler: async (_a, ctx) => ctx.binary(new Uint8Array([7]), 'audio/wav') });
    expect((await invokeTool(audio, {})).content).toEqual([{ type: 'audio', data: 'Bw==', mimeType: 'audio/wav' }]);
    const rawBuffer = defineTool({ name: 'raw', description: '', handler: async () => Buffer.from([1]) });
    expect((await invokeTool(rawBuffer, {})).content?.[0]).toMatchObject({
      type: 'resource',
      resource: { mimeType: 'application/octet-stream', blob: 'AQ==' },
    });
  });

  it('caps the number of warnings', async () => {
    const def = defineTool({
      name: 'noisy',
      description: '',
      handler: async (_a, ctx) => {
        for (let i = 0; i < 100; i++) ctx.warn('w', String(i));
        return {};
      },
    });
    const o = await createRuntime({ tools: [def], maxWarnings: 10 }).invoke('noisy');
    expect(o.warnings).toHaveLength(10);
    expect(o.warnings![9]).toEqual({ code: 'warnings-truncated', detail: '91 more warnings were left out.' });
  });

  it('includeStack puts the stack in details only when asked', async () => {
    const def = defineTool({
      name: 'a',
      description: '',
      handler: async () => {
        throw new Error('x');
      },
    });
    expect((await invokeTool(def, {})).error?.details).toEqual({ errorName: 'Error' });
    expect(String((await invokeTool(def, {}, { includeStack: true })).error?.details?.stack)).toContain('invoke.test.ts');
  });
});

describe('events and layering', () => {
  it('emits start and end with the same Invocation object; a throwing listener changes nothing', async () => {
    const def = defineTool({ name: 'a', description: '', handler: async () => ({ v: 1 }) });
    const runtime = createRuntime({ tools: [def], runId: 'run-1' });
    const seen: Array<[string, Invocation, unknown]> = [];
    const offStart = runtime.on('invoke:start', (inv) => seen.push(['start', inv, inv.outcome]));
    runtime.on('invoke:end', (inv) => seen.push(['end', inv, inv.outcome]));
    runtime.on('invoke:end', () => {
      throw new Error('listener bug');
    });
    const o = await runtime.invoke('a', { q: 1 });
    expect(o.status).toBe('ok');
    expect(seen.map((s) => s[0])).toEqual(['start', 'end']);
    expect(seen[0]![1]).toBe(seen[1]![1]);
    expect(seen[0]![2]).toBeUndefined();
    expect(seen[1]![2]).toBe(o);
    expect(seen[0]![1]).toMatchObject({ toolName: 'a', args: { q: 1 }, runId: 'run-1', toolCallId: o.toolCallId, ran: true });
    offStart();
    await runtime.invoke('a', {});
    expect(seen.map((s) => s[0])).toEqual(['start', 'end', 'end']);
    expect(() => runtime.on('nope' as 'invoke:end', () => {})).toThrow(/unknown runtime event/);
  });

  it('synthesizes outcomes that never ran the handler, with the same ids and a valid envelope', () => {
    let ran = false;
    const def = defineTool({ name: 'rm', description: '', approvalMode: 'destructive', riskTags: ['delete'], handler: async () => (ran = true) });
    const runtime = createRuntime({ tools: [def] });
    const ends: Invocation[] = [];
    runtime.on('invoke:end', (inv) => ends.push(inv));
    const o = runtime.outcome('rm', {
      status: 'paused',
      ids: { toolCallId: 'c-1', traceId: 'abc', policyDecisionId: 'pd-1' },
      error: toolError('elevation', 'approval-required', 'Waiting for an approver.'),
    });
    expect(o).toMatchObject({
      status: 'paused',
      toolCallId: 'c-1',
      traceId: 'abc',
      runId: runtime.runId,
      capabilityId: 'rm',
      policyDecisionId: 'pd-1',
      riskTags: ['delete'],
      latencyMs: 0,
    });
    expect(ran).toBe(false);
    expect(ends[0]).toMatchObject({ ran: false, outcome: o });
    const { contextos, mcec } = expectValidEnvelopes(o);
    expect(contextos.status).toBe('paused');
    expect(mcec.ok).toBe(false);
  });
});

describe('sessions', () => {
  it('failures carry the last good observation; sessions close and release', async () => {
    const query = defineTool({ name: 'query', description: '', handler: async ({ q }) => ({ found: q }) });
    const fails = defineTool({
      name: 'click',
      description: '',
      handler: async (_a, ctx) => ctx.fail({ category: 'stale-element', code: 'ref-expired', detail: 'The element went away.' }),
    });
    const runtime = createRuntime({ tools: [query, fails] });
    const session = createSession({ id: 'desk-1' });
    const first = await runtime.invoke('click', {}, { session });
    expect(first.error?.lastObservation).toBeUndefined();
    const ok = await runtime.invoke('query', { q: 'button' }, { session });
    expect(ok.sessionId).toBe('desk-1');
    const failed = await runtime.invoke('click', {}, { session });
    expect(failed.error?.lastObservation).toEqual({ tool: 'query', toolCallId: ok.toolCallId, kind: 'json', value: { found: 'button' } });
    const { mcec, contextos } = expectValidEnvelopes(failed);
    expect(mcec.sessionId).toBe('desk-1');
    expect(mcec.error?.lastObservation).toEqual(failed.error?.lastObservation);
    expect(contextos.session_id).toBe('desk-1');
    await session.close();
    expect(session.lastObservation).toBeUndefined();
    await expect(runtime.invoke('query', {}, { session })).rejects.toMatchObject({ code: 'closed' });
  });

  it('summarises large and binary observations to an artifact file, removed on close', async () => {
    const big = defineTool({ name: 'big', description: '', handler: async () => ({ text: 'é'.repeat(40_000) }) });
    const shot = defineTool({ name: 'shot', description: '', handler: async (_a, ctx) => ctx.binary(new Uint8Array(1000).fill(7), 'image/png') });
    const boom = defineTool({
      name: 'boom',
      description: '',
      handler: async () => {
        throw new Error('x');
      },
    });
    const runtime = createRuntime({ tools: [big, shot, boom] });
    const session = createSession({ inlineLimitBytes: 1024 });
    await runtime.invoke('big', {}, { session });
    const a = await runtime.invoke('boom', {}, { session });
    const summary = a.error!.lastObservation as Record<string, unknown>;
    expect(summary).toMatchObject({ tool: 'big', kind: 'json', mimeType: 'application/json', sizeBytes: 80_011 });
    expect(summary.value).toBeUndefined();
    expect(summary.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.parse(readFileSync(summary.artifactPath as string, 'utf8'))).toEqual({ text: 'é'.repeat(40_000) });

    await runtime.invoke('shot', {}, { session });
    const b = await runtime.invoke('boom', {}, { session });
    const binary = b.error!.lastObservation as Record<string, unknown>;
    expect(binary).toMatchObject({ tool: 'shot', kind: 'binary', mimeType: 'image/png', sizeBytes: 1000 });
    expect(readFileSync(binary.artifactPath as string)).toEqual(Buffer.alloc(1000, 7));
    expectValidEnvelopes(b);

    await session.close();
    expect(existsSync(summary.artifactPath as string)).toBe(false);
    expect(existsSync(binary.artifactPath as string)).toBe(false);
  });

  it('ctx.observe() sets what the session records', async () => {
    const def = defineTool({
      name: 'find',
      description: '',
      handler: async (_a, ctx) => {
        ctx.observe({ window: 'Report' });
        return { matches: 3 };
      },
    });
    const session = createSession();
    await invokeTool(def, {}, { session });
    expect(session.lastObservation).toMatchObject({ kind: 'json', value: { window: 'Report' } });
    await session.close();
  });
});

describe('deadline lists', () => {
  it('fires in order, never early, re-arms for the rest, and holds no active timer when idle', async () => {
    const fired: Array<[number, number]> = [];
    const t0 = performance.now();
    const entry = (n: number): DeadlineEntry => ({
      deadline: 0,
      prevEntry: undefined,
      nextEntry: undefined,
      deadlineList: undefined,
      onDeadline: () => fired.push([n, performance.now() - t0]),
    });
    const e1 = entry(1);
    const e2 = entry(2);
    const e3 = entry(3);
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const timersBefore = timers();
    // Same timeout, armed at different times: deadlines at t0+30, t0+200 (and e3, disarmed, at t0+35).
    armDeadline(e1, 30, t0);
    armDeadline(e3, 30, t0 + 5);
    armDeadline(e2, 30, t0 + 170);
    disarmDeadline(e3);
    expect(armedDeadlines()).toBe(2);
    // While calls are armed, one (ref'd) timer serves the whole list.
    expect(timers()).toBe(timersBefore + 1);
    await vi.waitFor(() => expect(fired.map((f) => f[0])).toEqual([1, 2]), { timeout: 5000, interval: 10 });
    expect(fired[0]![1]).toBeGreaterThanOrEqual(29);
    expect(fired[1]![1]).toBeGreaterThanOrEqual(199);
    expect(armedDeadlines()).toBe(0);
    expect(timers()).toBeLessThanOrEqual(timersBefore);
  });
});
