// One governed runtime (SQLite), called from the three frameworks' agent loops: the same policy
// decision, the same idempotency and one audit log, whichever framework calls the tool.
import { AIMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { Agent, run } from '@openai/agents';
import { ScriptedModel, assistantMessage, functionCall } from '@openai/agents/testing';
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { createAgent } from 'langchain';
import { describe, expect, it } from 'vitest';
import { compilePolicy } from '../governance/policy.js';
import { expectValidEnvelopes } from '../runtime/test-support/envelopes.js';
import { aiSdkTools } from './ai-sdk/index.js';
import { langchainTools } from './langchain/index.js';
import { openAiAgentsTools } from './openai-agents/index.js';
import { cleanupsAfterEach, governedFixture } from './test-support/tools.js';

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const cleanups = cleanupsAfterEach();
const policy = compilePolicy({ version: 1, rules: [{ name: 'no-booms', match: { tool: 'boom' }, effect: 'deny', reason: 'booms are not allowed here' }] });

function aiSdkModel(prefix: string) {
  return new MockLanguageModelV4({
    doGenerate: async (o) =>
      o.prompt.some((m) => m.role === 'tool')
        ? { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] }
        : {
            content: [
              { type: 'tool-call', toolCallId: `${prefix}-read`, toolName: 'notes_read', input: '{"id":"welcome"}' },
              { type: 'tool-call', toolCallId: `${prefix}-boom`, toolName: 'boom', input: '{}' },
            ],
            finishReason: { unified: 'tool-calls', raw: undefined },
            usage,
            warnings: [],
          },
  });
}

describe('the same governed runtime under the three frameworks', () => {
  it('keeps policy, idempotency and audit whichever framework calls the tool', async () => {
    const fx = await governedFixture(policy);
    cleanups.push(fx.cleanup);

    const ai = aiSdkTools(fx.governed);
    await generateText({ model: aiSdkModel('ai'), tools: ai.tools, toolApproval: ai.toolApproval, prompt: 'x', stopWhen: stepCountIs(3) });

    const oa = openAiAgentsTools(fx.governed);
    const script = new ScriptedModel([
      [functionCall('notes_read', { id: 'welcome' }, { callId: 'oa-read' }), functionCall('boom', {}, { callId: 'oa-boom' })],
      [assistantMessage('done')],
    ]);
    await run(new Agent({ name: 'a', model: script, tools: oa.tools }), 'x');

    const lc = langchainTools(fx.governed);
    const fake = fakeModel()
      .respondWithTools([
        { name: 'notes_read', args: { id: 'welcome' }, id: 'lc-read' },
        { name: 'boom', args: {}, id: 'lc-boom' },
      ])
      .respond(new AIMessage('done'));
    await createAgent({ model: fake, tools: lc.tools }).invoke({ messages: [{ role: 'user', content: 'x' }] });

    // Policy: the denied tool never ran, and each framework got the same blocked outcome.
    for (const [kit, id] of [
      [ai, 'ai-boom'],
      [oa, 'oa-boom'],
      [lc, 'lc-boom'],
    ] as const) {
      expect(kit.outcomeOf(id)).toMatchObject({ status: 'blocked', error: { category: 'elevation', code: 'policy-denied' } });
      expectValidEnvelopes(kit.outcomeOf(id)!);
    }
    expect(fx.counters.reads).toBe(3);

    // Idempotency: the same framework call id again (a fresh toolkit, as after a restart) is a replay, not a second run.
    const again = aiSdkTools(fx.governed);
    await generateText({ model: aiSdkModel('ai'), tools: again.tools, toolApproval: again.toolApproval, prompt: 'x', stopWhen: stepCountIs(3) });
    expect(fx.counters.reads).toBe(3);
    expect(again.outcomeOf('ai-read')).toMatchObject({ status: 'ok', result: { id: 'welcome' } });

    // Audit: one log, each record with its framework's call id and idempotency key.
    await fx.governed.flush();
    const { records } = await fx.store.listAudit({ tool: ['notes.read', 'boom'] }, { limit: 100 });
    const rows = records
      .map((r) => [r.tool, r.status, r.idempotencyKey, r.replay, (r.callEnvelope as { metadata?: { framework?: string } }).metadata?.framework])
      .sort((a, b) => `${String(a[2])}|${String(a[3])}`.localeCompare(`${String(b[2])}|${String(b[3])}`));
    expect(rows).toEqual([
      ['boom', 'blocked', 'ai-sdk:ai-boom', false, 'ai-sdk'],
      ['boom', 'blocked', 'ai-sdk:ai-boom', false, 'ai-sdk'],
      ['notes.read', 'ok', 'ai-sdk:ai-read', false, 'ai-sdk'],
      ['notes.read', 'ok', 'ai-sdk:ai-read', true, 'ai-sdk'],
      ['boom', 'blocked', 'langchain:lc-boom', false, 'langchain'],
      ['notes.read', 'ok', 'langchain:lc-read', false, 'langchain'],
      ['boom', 'blocked', 'openai-agents:oa-boom', false, 'openai-agents'],
      ['notes.read', 'ok', 'openai-agents:oa-read', false, 'openai-agents'],
    ]);
  });
});
