// The AI SDK adapter in real `generateText` loops driven by the AI SDK's own MockLanguageModelV4.
import { type ModelMessage, ToolLoopAgent, generateText, simulateReadableStream, stepCountIs, streamText } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { ERROR_CATEGORIES } from '../../core/taxonomy.js';
import { oracleValidate } from '../../../test/oracle.js';
import { expectValidEnvelopes } from '../../runtime/test-support/envelopes.js';
import { cleanupsAfterEach, governedFixture, plainFixture } from '../test-support/tools.js';
import { aiSdkTools } from './index.js';

type LanguageModelV4CallOptions = Parameters<MockLanguageModelV4['doGenerate']>[0];
type LanguageModelV4GenerateResult = Awaited<ReturnType<MockLanguageModelV4['doGenerate']>>;

type StreamChunk = Awaited<ReturnType<MockLanguageModelV4['doStream']>>['stream'] extends ReadableStream<infer C> ? C : never;

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

function toolCall(toolCallId: string, toolName: string, input: unknown): LanguageModelV4GenerateResult {
  return {
    content: [{ type: 'tool-call', toolCallId, toolName, input: JSON.stringify(input) }],
    finishReason: { unified: 'tool-calls', raw: undefined },
    usage,
    warnings: [],
  };
}
function text(t: string): LanguageModelV4GenerateResult {
  return { content: [{ type: 'text', text: t }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] };
}

/** A mock model answering from a script, one response per model call. */
function scripted(...responses: LanguageModelV4GenerateResult[]): MockLanguageModelV4 {
  let i = 0;
  return new MockLanguageModelV4({
    doGenerate: async () => {
      const r = responses[i++];
      if (!r) throw new Error('the script has no more responses');
      return r;
    },
  });
}

/** The tool-result outputs the model was shown in a call's prompt. */
function toolOutputsSeen(call: LanguageModelV4CallOptions | undefined): unknown[] {
  return (call?.prompt ?? []).filter((m) => m.role === 'tool').flatMap((m) => m.content.filter((p) => p.type === 'tool-result').map((p) => p.output));
}

const cleanups = cleanupsAfterEach();

describe('tool-envelope/ai-sdk in a generateText loop (MockLanguageModelV4)', () => {
  it('success: the tool result is the envelope, the model sees json', async () => {
    const { runtime } = plainFixture();
    const kit = aiSdkTools(runtime);
    const model = scripted(toolCall('c1', 'notes_read', { id: 'welcome' }), text('The note says hello.'));
    const result = await generateText({ model, tools: kit.tools, toolApproval: kit.toolApproval, prompt: 'Read the welcome note.', stopWhen: stepCountIs(4) });
    expect(result.text).toBe('The note says hello.');
    const output = result.steps[0]!.toolResults[0]!.output;
    expect(output).toMatchObject({ ok: true, result: { id: 'welcome', text: 'Hello from tool-envelope.' } });
    expect(oracleValidate('mcec', output).valid).toBe(true);
    expect(toolOutputsSeen(model.doGenerateCalls[1])).toEqual([{ type: 'json', value: { id: 'welcome', text: 'Hello from tool-envelope.' } }]);
    expectValidEnvelopes(kit.outcomeOf('c1')!);
  });

  it.each(ERROR_CATEGORIES)('failure %s: the model sees error-json with category, code, retryable and remediation', async (category) => {
    const { runtime } = plainFixture();
    const kit = aiSdkTools(runtime, { contract: 'dw' });
    const model = scripted(toolCall('c1', 'fail', { category }), text('done'));
    const result = await generateText({ model, tools: kit.tools, toolApproval: kit.toolApproval, prompt: 'x', stopWhen: stepCountIs(4) });
    const output = result.steps[0]!.toolResults[0]!.output;
    expect(output).toMatchObject({ schema: 'durable-workflow.v2.mcp-tool-result', status: 'error', error: { code: `${category}-failure` } });
    expect(oracleValidate('dw', output).valid).toBe(true);
    const [seen] = toolOutputsSeen(model.doGenerateCalls[1]) as [{ type: string; value: Record<string, unknown> }];
    expect(seen.type).toBe('error-json');
    expect(seen.value).toMatchObject({ status: 'error', category, code: `${category}-failure`, detail: `Failed with ${category}.` });
    expect(typeof seen.value.retryable).toBe('boolean');
    expect(typeof seen.value.remediation).toBe('string');
    expectValidEnvelopes(kit.outcomeOf('c1')!);
  });

  it('a thrown error, a timeout and bad arguments are failures the model sees, not exceptions', async () => {
    const { runtime } = plainFixture();
    const kit = aiSdkTools(runtime, { contract: 'contextos' });
    const model = new MockLanguageModelV4({
      doGenerate: async (options) =>
        options.prompt.some((m) => m.role === 'tool')
          ? text('noted')
          : {
              content: [
                { type: 'tool-call', toolCallId: 't1', toolName: 'boom', input: '{}' },
                { type: 'tool-call', toolCallId: 't2', toolName: 'slow', input: '{}' },
                { type: 'tool-call', toolCallId: 't3', toolName: 'notes_read', input: '{"id":42}' },
              ],
              finishReason: { unified: 'tool-calls', raw: undefined },
              usage,
              warnings: [],
            },
    });
    const result = await generateText({ model, tools: kit.tools, toolApproval: kit.toolApproval, prompt: 'x', stopWhen: stepCountIs(4) });
    expect(result.text).toBe('noted');
    for (const r of result.steps[0]!.toolResults) expect(oracleValidate('contextos-result', r.output).valid).toBe(true);
    const seen = toolOutputsSeen(model.doGenerateCalls[1]) as Array<{ type: string; value: Record<string, unknown> }>;
    expect(seen.map((s) => [s.type, s.value.category, s.value.code])).toEqual([
      ['error-json', 'internal', 'unhandled-exception'],
      ['error-json', 'timeout', 'deadline-exceeded'],
      ['error-json', 'invalid-argument', 'invalid-arguments'],
    ]);
    for (const id of ['t1', 't2', 't3']) expectValidEnvelopes(kit.outcomeOf(id)!);
  });

  describe('arguments that are not JSON', () => {
    const malformed = (): MockLanguageModelV4 =>
      new MockLanguageModelV4({
        doGenerate: async (options) =>
          options.prompt.some((m) => m.role === 'tool')
            ? text('noted')
            : {
                content: [{ type: 'tool-call', toolCallId: 'j1', toolName: 'notes_read', input: 'not json' }],
                finishReason: { unified: 'tool-calls', raw: undefined },
                usage,
                warnings: [],
              },
      });

    it('with the kit repairToolCall: the runtime answers invalid-argument, onOutcome and outcomeOf see it', async () => {
      const { runtime, counters } = plainFixture();
      const seen: string[] = [];
      const kit = aiSdkTools(runtime, { onOutcome: (o, c) => seen.push(`${c.callId}:${o.status}:${o.error?.category}`) });
      const model = malformed();
      const settings = { model, tools: kit.tools, toolApproval: kit.toolApproval, repairToolCall: kit.repairToolCall, stopWhen: stepCountIs(4) };
      const result = await generateText({ ...settings, prompt: 'x' });
      expect(result.text).toBe('noted');
      expect(result.steps[0]!.toolResults[0]!.output).toMatchObject({ ok: false, error: { category: 'invalid-argument' } });
      const [shown] = toolOutputsSeen(model.doGenerateCalls[1]) as [{ type: string; value: Record<string, unknown> }];
      expect([shown.type, shown.value.category]).toEqual(['error-json', 'invalid-argument']);
      expect(seen).toEqual(['j1:error:invalid-argument']);
      expectValidEnvelopes(kit.outcomeOf('j1')!);
      expect(counters.reads).toBe(0);
      // The same in a ToolLoopAgent.
      const agent = new ToolLoopAgent({ ...settings, model: malformed() });
      expect((await agent.generate({ prompt: 'x' })).steps[0]!.toolResults[0]!.output).toMatchObject({ ok: false, error: { category: 'invalid-argument' } });
      // Governed: the call is audited.
      const fx = await governedFixture();
      cleanups.push(fx.cleanup);
      const governedKit = aiSdkTools(fx.governed);
      await generateText({
        ...settings,
        model: malformed(),
        tools: governedKit.tools,
        toolApproval: governedKit.toolApproval,
        repairToolCall: governedKit.repairToolCall,
        prompt: 'x',
      });
      expect((await fx.store.listAudit({ tool: 'notes.read' })).records.map((r) => r.status)).toEqual(['error']);
    });

    it('without it (as docs/frameworks.md says): the SDK answers error-text itself, no envelope, no outcome', async () => {
      const { runtime, counters } = plainFixture();
      const seen: unknown[] = [];
      const kit = aiSdkTools(runtime, { onOutcome: (o) => seen.push(o) });
      const model = malformed();
      await generateText({ model, tools: kit.tools, toolApproval: kit.toolApproval, prompt: 'x', stopWhen: stepCountIs(4) });
      const [shown] = toolOutputsSeen(model.doGenerateCalls[1]) as [{ type: string; value: string }];
      expect(shown.type).toBe('error-text');
      expect(shown.value).toMatch(/^AI_InvalidToolInputError/);
      expect([seen, kit.outcomeOf('j1'), counters.reads]).toEqual([[], undefined, 0]);
    });
  });

  it('ToolLoopAgent: the same tools and toolApproval; a destructive call stops at the approval request', async () => {
    const { runtime, counters } = plainFixture();
    const kit = aiSdkTools(runtime);
    const model = scripted(toolCall('l1', 'notes_read', { id: 'welcome' }), toolCall('l2', 'repo_delete', { name: 'old-site' }));
    const agent = new ToolLoopAgent({ model, tools: kit.tools, toolApproval: kit.toolApproval, stopWhen: stepCountIs(5) });
    const result = await agent.generate({ prompt: 'Read, then delete.' });
    expect(result.steps[0]!.toolResults[0]!.output).toMatchObject({ ok: true, result: { id: 'welcome' } });
    expect(result.content.filter((p) => p.type === 'tool-approval-request')).toHaveLength(1);
    expect(counters).toEqual({ reads: 1, deletes: [] });
    expect(kit.outcomeOf('l2')?.status).toBe('paused');
  });

  it('an envelope read back from stored messages gives the model the same output part', async () => {
    const { runtime } = plainFixture();
    const kit = aiSdkTools(runtime, { contract: 'contextos' });
    const t = kit.tools.notes_read!;
    const live = await t.execute!({ id: 'nope' }, { toolCallId: 'x1', messages: [], context: {} });
    const stored = JSON.parse(JSON.stringify(live)) as unknown;
    const fromLive = await t.toModelOutput!({ toolCallId: 'x1', input: {}, output: live });
    expect(fromLive).toMatchObject({ type: 'error-json', value: { category: 'no-target', code: 'note-not-found' } });
    expect(await t.toModelOutput!({ toolCallId: 'x1', input: {}, output: stored })).toEqual(fromLive);
  });

  it('streamText: the same tools stream their envelope and the model sees error-json', async () => {
    const { runtime } = plainFixture();
    const kit = aiSdkTools(runtime);
    const finish = (unified: 'tool-calls' | 'stop'): StreamChunk => ({ type: 'finish', finishReason: { unified, raw: undefined }, usage });
    const model = new MockLanguageModelV4({
      doStream: async (options) => ({
        stream: simulateReadableStream<StreamChunk>({
          chunks: options.prompt.some((m) => m.role === 'tool')
            ? [
                { type: 'text-start' as const, id: 't' },
                { type: 'text-delta' as const, id: 't', delta: 'No such note.' },
                { type: 'text-end' as const, id: 't' },
                finish('stop'),
              ]
            : [{ type: 'tool-call' as const, toolCallId: 's1', toolName: 'notes_read', input: '{"id":"nope"}' }, finish('tool-calls')],
        }),
      }),
    });
    const result = streamText({ model, tools: kit.tools, toolApproval: kit.toolApproval, prompt: 'x', stopWhen: stepCountIs(3) });
    expect(await result.text).toBe('No such note.');
    const [step] = await result.steps;
    expect(step!.toolResults[0]!.output).toMatchObject({ ok: false, error: { category: 'no-target', code: 'note-not-found' } });
    const seen = model.doStreamCalls[1]!.prompt.filter((m) => m.role === 'tool').flatMap((m) =>
      m.content.map((p) => (p.type === 'tool-result' ? p.output : null)),
    );
    expect(seen).toEqual([{ type: 'error-json', value: expect.objectContaining({ category: 'no-target', code: 'note-not-found', retryable: true }) }]);
    expectValidEnvelopes(kit.outcomeOf('s1')!);
  });

  describe('a destructive call waits for a human (plain runtime: from the approval mode)', () => {
    async function firstTurn() {
      const { runtime, counters } = plainFixture();
      const kit = aiSdkTools(runtime);
      const model = scripted(toolCall('d1', 'repo_delete', { name: 'old-site' }), text('Deleted.'), text('Not deleted.'));
      const messages: ModelMessage[] = [{ role: 'user', content: 'Delete old-site.' }];
      const first = await generateText({ model, tools: kit.tools, toolApproval: kit.toolApproval, messages, stopWhen: stepCountIs(4) });
      const request = first.content.find((p) => p.type === 'tool-approval-request');
      expect(request).toBeDefined();
      expect(counters.deletes).toEqual([]);
      expect(kit.outcomeOf('d1')).toMatchObject({ status: 'paused', error: { category: 'elevation', code: 'approval-required' } });
      expectValidEnvelopes(kit.outcomeOf('d1')!);
      messages.push(...first.responseMessages);
      return { kit, model, messages, counters, request: request! };
    }

    it('approved: runs exactly once, the model sees the result', async () => {
      const { kit, model, messages, counters, request } = await firstTurn();
      messages.push({ role: 'tool', content: [await kit.respond(request, { approved: true, approver: 'alice' })] });
      expect(counters.deletes).toEqual(['old-site']);
      const second = await generateText({ model, tools: kit.tools, toolApproval: kit.toolApproval, messages, stopWhen: stepCountIs(4) });
      expect(second.text).toBe('Deleted.');
      expect(counters.deletes).toEqual(['old-site']);
      expect(toolOutputsSeen(model.doGenerateCalls[1])).toEqual([{ type: 'json', value: { deleted: 'old-site' } }]);
      expect(kit.outcomeOf('d1')).toMatchObject({ status: 'completed', metadata: { approvedBy: 'alice' } });
      expectValidEnvelopes(kit.outcomeOf('d1')!);
    });

    it('rejected: never runs, the model sees execution-denied', async () => {
      const { kit, model, messages, counters, request } = await firstTurn();
      messages.push({ role: 'tool', content: [await kit.respond(request, { approved: false, approver: 'bob', reason: 'change freeze' })] });
      await generateText({ model, tools: kit.tools, toolApproval: kit.toolApproval, messages, stopWhen: stepCountIs(4) });
      expect(counters.deletes).toEqual([]);
      expect(toolOutputsSeen(model.doGenerateCalls[1])).toEqual([{ type: 'execution-denied', reason: 'change freeze' }]);
      expect(kit.outcomeOf('d1')).toMatchObject({ status: 'rejected', error: { code: 'approval-rejected' } });
      expectValidEnvelopes(kit.outcomeOf('d1')!);
    });
  });

  it('without toolApproval, the tool-level needsApproval asks the same gate', async () => {
    const { runtime, counters } = plainFixture();
    const kit = aiSdkTools(runtime);
    const model = scripted(toolCall('n1', 'repo_delete', { name: 'old-site' }), text('Deleted.'));
    const first = await generateText({ model, tools: kit.tools, prompt: 'Delete old-site.', stopWhen: stepCountIs(4) });
    expect(first.content.filter((p) => p.type === 'tool-approval-request')).toHaveLength(1);
    expect(counters.deletes).toEqual([]);
    expect(kit.outcomeOf('n1')?.status).toBe('paused');
  });

  describe('under a governed runtime (SQLite): policy, idempotency and audit hold', () => {
    async function firstTurn(callId: string) {
      const fx = await governedFixture();
      cleanups.push(fx.cleanup);
      const kit = aiSdkTools(fx.governed);
      const model = scripted(toolCall(callId, 'repo_delete', { name: 'old-site' }), text('Deleted.'));
      const messages: ModelMessage[] = [{ role: 'user', content: 'Delete old-site.' }];
      const first = await generateText({ model, tools: kit.tools, toolApproval: kit.toolApproval, messages, stopWhen: stepCountIs(4) });
      const request = first.content.find((p) => p.type === 'tool-approval-request')!;
      expect(request.reason).toMatch(/Waiting for an approver \(apr_/);
      const [pending] = await fx.governed.approvals();
      expect(pending).toMatchObject({ state: 'pending', tool: 'repo.delete' });
      expect(fx.counters.deletes).toEqual([]);
      messages.push(...first.responseMessages);
      return { ...fx, kit, model, messages, request, pending: pending! };
    }

    it('approved through governed.approve: runs once, audited with the approver', async () => {
      const { kit, model, messages, counters, request, governed, store, pending } = await firstTurn('g1');
      messages.push({ role: 'tool', content: [await kit.respond(request, { approved: true, approver: 'alice' })] });
      const second = await generateText({ model, tools: kit.tools, toolApproval: kit.toolApproval, messages, stopWhen: stepCountIs(4) });
      expect(second.text).toBe('Deleted.');
      expect(counters.deletes).toEqual(['old-site']);
      expect(kit.outcomeOf('g1')).toMatchObject({ status: 'completed', metadata: { approvalId: pending.id, approvedBy: 'alice' } });
      expectValidEnvelopes(kit.outcomeOf('g1')!);
      await governed.flush();
      const { records } = await store.listAudit({ tool: 'repo.delete' });
      expect(records.map((r) => r.status).sort()).toEqual(['completed', 'paused']);
      expect((await store.getApproval(pending.id))?.state).toBe('completed');
    });

    it('rejected through governed.reject: never runs', async () => {
      const { kit, model, messages, counters, request, governed, store, pending } = await firstTurn('g2');
      messages.push({ role: 'tool', content: [await kit.respond(request, { approved: false, approver: 'bob', reason: 'freeze' })] });
      await generateText({ model, tools: kit.tools, toolApproval: kit.toolApproval, messages, stopWhen: stepCountIs(4) });
      expect(counters.deletes).toEqual([]);
      expect(toolOutputsSeen(model.doGenerateCalls[1])).toEqual([{ type: 'execution-denied', reason: 'freeze' }]);
      expect((await store.getApproval(pending.id))?.state).toBe('rejected');
      await governed.flush();
      expect((await store.listAudit({ tool: 'repo.delete' })).records.map((r) => r.status).sort()).toEqual(['paused', 'rejected']);
    });

    it('an allowed call runs once under the idempotency key of its call id', async () => {
      const fx = await governedFixture();
      cleanups.push(fx.cleanup);
      const kit = aiSdkTools(fx.governed);
      const model = scripted(toolCall('r1', 'notes_read', { id: 'welcome' }), text('ok'));
      await generateText({ model, tools: kit.tools, toolApproval: kit.toolApproval, prompt: 'x', stopWhen: stepCountIs(4) });
      expect(fx.counters.reads).toBe(1);
      expect(toolOutputsSeen(model.doGenerateCalls[1])).toEqual([{ type: 'json', value: { id: 'welcome', text: 'Hello from tool-envelope.' } }]);
      await fx.governed.flush();
      const { records } = await fx.store.listAudit({ tool: 'notes.read' });
      expect(records).toHaveLength(1);
      expect(records[0]).toMatchObject({ status: 'ok', idempotencyKey: 'ai-sdk:r1' });
    });
  });
});
