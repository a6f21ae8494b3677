// The OpenAI Agents SDK adapter in real `run()` loops driven by the SDK's own ScriptedModel.
import { Agent, run } from '@openai/agents';
import { ScriptedModel, assistantMessage, functionCall } from '@openai/agents/testing';
import { describe, expect, it } from 'vitest';
import { ERROR_CATEGORIES } from '../../core/taxonomy.js';
import { oracleValidate } from '../../../test/oracle.js';
import { expectValidEnvelopes } from '../../runtime/test-support/envelopes.js';
import type { ToolSource } from '../bridge.js';
import { cleanupsAfterEach, fixture, plainFixture } from '../test-support/tools.js';
import { type OpenAiAgentsToolsOptions, openAiAgentsTools } from './index.js';

/** The tool outputs (as text) the model was shown in its call `n`. */
function outputsSeen(model: ScriptedModel, n: number): string[] {
  const input = model.calls[n]?.request.input;
  if (!Array.isArray(input)) return [];
  return input
    .filter((i): i is Extract<typeof i, { type: 'function_call_result' }> => i.type === 'function_call_result')
    .map((i) => (typeof i.output === 'string' ? i.output : 'text' in i.output ? i.output.text : JSON.stringify(i.output)));
}

function setup(source: ToolSource, model: ScriptedModel, options?: OpenAiAgentsToolsOptions) {
  const kit = openAiAgentsTools(source, options);
  const agent = new Agent({ name: 'tester', instructions: 'Use the tools.', model, tools: kit.tools });
  return { kit, agent };
}

const cleanups = cleanupsAfterEach();

describe('tool-envelope/openai-agents in a run() loop (ScriptedModel)', () => {
  it('success: the model sees the result, the application keeps the envelope', async () => {
    const { runtime } = plainFixture();
    const model = new ScriptedModel([[functionCall('notes_read', { id: 'welcome' }, { callId: 'c1' })], [assistantMessage('It says hello.')]]);
    const { kit, agent } = setup(runtime, model, { contract: 'contextos' });
    const result = await run(agent, 'Read the welcome note.');
    expect(result.finalOutput).toBe('It says hello.');
    expect(outputsSeen(model, 1)).toEqual([JSON.stringify({ id: 'welcome', text: 'Hello from tool-envelope.' })]);
    const item = result.newItems.find((i) => i.type === 'tool_call_output_item');
    expect(item?.type === 'tool_call_output_item' && item.customData).toEqual({ envelope: kit.envelopeOf('c1'), status: 'ok' });
    const envelope = kit.envelopeOf('c1');
    expect(envelope).toMatchObject({ status: 'ok', capability_id: 'notes.read' });
    expect(oracleValidate('contextos-result', envelope).valid).toBe(true);
    expectValidEnvelopes(kit.outcomeOf('c1')!);
  });

  it.each(ERROR_CATEGORIES)('failure %s reaches the model as text built from the envelope', async (category) => {
    const { runtime } = plainFixture();
    const model = new ScriptedModel([[functionCall('fail', { category }, { callId: 'c1' })], [assistantMessage('ok')]]);
    const { kit, agent } = setup(runtime, model);
    await run(agent, 'x');
    const [seen] = outputsSeen(model, 1);
    expect(seen).toContain(`[${category}/${category}-failure]: Failed with ${category}.`);
    expect(seen).toMatch(/Retryable: (yes|no)\. Remediation: \S/);
    expect(kit.outcomeOf('c1')).toMatchObject({ status: 'error', error: { category } });
    expectValidEnvelopes(kit.outcomeOf('c1')!);
  });

  it('a thrown error, a timeout and bad arguments reach the model as failures; the run goes on', async () => {
    const { runtime } = plainFixture();
    const model = new ScriptedModel([
      [functionCall('boom', {}, { callId: 't1' }), functionCall('slow', {}, { callId: 't2' }), functionCall('notes_read', { id: 42 }, { callId: 't3' })],
      [assistantMessage('noted')],
    ]);
    const { kit, agent } = setup(runtime, model);
    const result = await run(agent, 'x');
    expect(result.finalOutput).toBe('noted');
    const seen = outputsSeen(model, 1);
    expect(seen[0]).toMatch(/^Tool error \[internal\/unhandled-exception\]/);
    expect(seen[1]).toMatch(/^Tool error \[timeout\/deadline-exceeded\]/);
    expect(seen[2]).toMatch(/^Tool error \[invalid-argument\/invalid-arguments\]/);
    for (const id of ['t1', 't2', 't3']) expectValidEnvelopes(kit.outcomeOf(id)!);
  });

  for (const governedRun of [false, true]) {
    describe(
      governedRun ? 'a paused destructive call under a governed runtime (SQLite)' : 'a destructive call (plain runtime: needsApproval from the approval mode)',
      () => {
        async function interrupted() {
          const fx = await fixture(governedRun);
          cleanups.push(fx.cleanup);
          const { source } = fx;
          const model = new ScriptedModel([[functionCall('repo_delete', { name: 'old-site' }, { callId: 'd1' })], [assistantMessage('Finished.')]]);
          const { kit, agent } = setup(source, model);
          const first = await run(agent, 'Delete old-site.');
          expect(first.interruptions).toHaveLength(1);
          expect(fx.counters.deletes).toEqual([]);
          expect(kit.outcomeOf('d1')).toMatchObject({ status: 'paused', error: { category: 'elevation', code: 'approval-required' } });
          expectValidEnvelopes(kit.outcomeOf('d1')!);
          return { ...fx, kit, agent, model, first, item: first.interruptions[0]! };
        }

        it('approved: runs exactly once, the model sees the result', async () => {
          const { kit, agent, model, first, item, counters, governed, store } = await interrupted();
          const decided = await kit.approve(first.state, item, { approver: 'alice' });
          expect(decided.status).toBe('completed');
          const second = await run(agent, first.state);
          expect(second.finalOutput).toBe('Finished.');
          expect(counters.deletes).toEqual(['old-site']);
          expect(outputsSeen(model, 1)).toEqual([JSON.stringify({ deleted: 'old-site' })]);
          expectValidEnvelopes(kit.outcomeOf('d1')!);
          if (governed && store) {
            await governed.flush();
            expect((await store.listAudit({ tool: 'repo.delete' })).records.map((r) => r.status).sort()).toEqual(['completed', 'paused']);
            expect((await governed.approvals({ state: 'completed' }))[0]).toMatchObject({ decidedBy: 'alice' });
          }
        });

        it('rejected: never runs, the model is told why', async () => {
          const { kit, agent, model, first, item, counters, governed, store } = await interrupted();
          const decided = await kit.reject(first.state, item, { approver: 'bob', reason: 'change freeze' });
          expect(decided).toMatchObject({ status: 'rejected', error: { code: 'approval-rejected' } });
          await run(agent, first.state);
          expect(counters.deletes).toEqual([]);
          expect(outputsSeen(model, 1)[0]).toMatch(
            /^Tool call not approved \(do not retry it\) \[elevation\/approval-rejected\]: Rejected by bob: change freeze/,
          );
          expectValidEnvelopes(kit.outcomeOf('d1')!);
          if (governed && store) {
            await governed.flush();
            expect((await store.listAudit({ tool: 'repo.delete' })).records.map((r) => r.status).sort()).toEqual(['paused', 'rejected']);
          }
        });
      },
    );
  }
});
