// 10 000 concurrent invocations of a mixed set of tools: every envelope is
// valid, and afterwards no timers, listeners or handles are left behind.
import { getEventListeners } from 'node:events';
import { setImmediate as tick } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolFailure } from '../core/classify.js';
import type { ToolOutcome } from '../core/model.js';
import { armedDeadlines } from './deadline.js';
import { defineTool } from './define.js';
import { createRuntime } from './runtime.js';
import { createSession } from './session.js';
import { expectValidEnvelopes } from './test-support/envelopes.js';

function resourceCounts(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) counts[r] = (counts[r] ?? 0) + 1;
  return counts;
}

const tools = [
  defineTool({ name: 'ok', description: '', approvalMode: 'read_only', handler: async ({ i }) => ({ i }) }),
  defineTool({ name: 'sync', description: '', approvalMode: 'read_only', handler: ({ i }) => ({ doubled: (i as number) * 2 }) }),
  defineTool({
    name: 'typed',
    description: '',
    approvalMode: 'read_only',
    handler: async () => {
      throw new ToolFailure({ category: 'no-target', code: 'gone', detail: 'Gone.' });
    },
  }),
  defineTool({
    name: 'throws',
    description: '',
    approvalMode: 'read_only',
    handler: async () => {
      throw new Error('boom');
    },
  }),
  defineTool({ name: 'hangs', description: '', approvalMode: 'read_only', timeoutMs: 30, handler: () => new Promise(() => {}) }),
  defineTool({
    name: 'sleeps',
    description: '',
    approvalMode: 'read_only',
    // Honours its signal: the timer it starts is cleared when the call is cancelled or times out.
    handler: (_args, ctx) =>
      new Promise((resolve, reject) => {
        const t = setTimeout(() => resolve({ slept: true }), 5);
        ctx.signal.addEventListener(
          'abort',
          () => {
            clearTimeout(t);
            reject(ctx.signal.reason);
          },
          { once: true },
        );
      }),
  }),
  defineTool({ name: 'bigint', description: '', approvalMode: 'read_only', handler: async () => ({ n: 10n }) }),
  defineTool({
    name: 'zod',
    description: '',
    approvalMode: 'read_only',
    input: z.object({ i: z.number().int().nonnegative(), tag: z.string() }),
    handler: async ({ i, tag }, ctx) => {
      ctx.warn('tagged', tag);
      return { i };
    },
  }),
];

describe('10 000 concurrent invocations', () => {
  it('all resolve to valid envelopes and leave nothing behind', async () => {
    const runtime = createRuntime({ tools, defaultTimeoutMs: 5_000 });
    const session = createSession();
    const before = resourceCounts();
    const controllers = Array.from({ length: 10 }, () => new AbortController());
    const names = tools.map((t) => t.name);
    const N = 10_000;
    const pending: Promise<ToolOutcome>[] = [];
    for (let i = 0; i < N; i++) {
      const name = names[i % names.length]!;
      const signal = controllers[i % controllers.length]!.signal;
      const args = name === 'zod' && i % 3 === 0 ? { i: -1 } : { i, tag: `t${i}` };
      pending.push(runtime.invoke(name, args, { signal, ...(i % 5 === 0 ? { session } : {}) }));
    }
    // Every caller signal has one listener per call still in flight on it.
    expect(getEventListeners(controllers[0]!.signal, 'abort').length).toBeGreaterThan(0);
    // Cancel the calls on one controller while they are in flight.
    controllers[9]!.abort(new Error('stop'));
    const outcomes = await Promise.all(pending);

    const byStatus = new Map<string, number>();
    for (let i = 0; i < N; i++) {
      const o = outcomes[i]!;
      expectValidEnvelopes(o);
      const key = `${o.capabilityId}:${o.status}:${o.error?.code ?? ''}`;
      byStatus.set(key, (byStatus.get(key) ?? 0) + 1);
      // Calls on the aborted controller were cancelled, except those that settled synchronously inside invoke().
      const settledSync = o.capabilityId === 'sync' || (o.capabilityId === 'zod' && i % 3 === 0);
      if (i % 10 === 9 && !settledSync) expect(o.error?.code).toBe('cancelled');
    }
    // Every kind of outcome happened.
    const codes = new Set([...byStatus.keys()].map((k) => k.split(':').slice(1).join(':')));
    for (const want of ['ok:', 'error:gone', 'error:unhandled-exception', 'error:deadline-exceeded', 'error:cancelled', 'error:invalid-arguments']) {
      expect(codes).toContain(want);
    }
    expect(new Set(outcomes.map((o) => o.toolCallId)).size).toBe(N);

    await tick();
    expect(armedDeadlines()).toBe(0);
    for (const c of controllers) expect(getEventListeners(c.signal, 'abort')).toHaveLength(0);
    const after = resourceCounts();
    for (const [kind, n] of Object.entries(after)) expect(n, `active ${kind}`).toBeLessThanOrEqual(before[kind] ?? 0);
    await session.close();
  });
});
