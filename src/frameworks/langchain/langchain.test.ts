// The LangChain adapter in real createAgent loops (langchain v1) driven by @langchain/core's fakeModel.
import { AIMessage, type BaseMessage, ToolMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { createAgent } from 'langchain';
import { describe, expect, it } from 'vitest';
import { ERROR_CATEGORIES, foundingMcecCategory } from '../../core/taxonomy.js';
import { oracleValidate } from '../../../test/oracle.js';
import { expectValidEnvelopes } from '../../runtime/test-support/envelopes.js';
import type { ToolSource } from '../bridge.js';
import { cleanupsAfterEach, fixture, plainFixture } from '../test-support/tools.js';
import { type LangChainToolsOptions, langchainTools } from './index.js';

function agentWith(source: ToolSource, calls: Array<{ name: string; args: Record<string, unknown>; id: string }>, options?: LangChainToolsOptions) {
  const kit = langchainTools(source, options);
  const model = fakeModel().respondWithTools(calls).respond(new AIMessage('done'));
  const agent = createAgent({ model, tools: kit.tools });
  const invoke = async (): Promise<ToolMessage[]> => {
    const { messages } = await agent.invoke({ messages: [{ role: 'user', content: 'Go.' }] });
    return (messages as BaseMessage[]).filter((m): m is ToolMessage => ToolMessage.isInstance(m));
  };
  return { kit, invoke };
}

const cleanups = cleanupsAfterEach();

describe('tool-envelope/langchain in a createAgent loop (fakeModel)', () => {
  it('success: status success, content the result, artifact the envelope', async () => {
    const { runtime } = plainFixture();
    const { kit, invoke } = agentWith(runtime, [{ name: 'notes_read', args: { id: 'welcome' }, id: 'c1' }], { contract: 'dw' });
    const [msg] = await invoke();
    expect(msg).toMatchObject({
      status: 'success',
      tool_call_id: 'c1',
      name: 'notes_read',
      content: JSON.stringify({ id: 'welcome', text: 'Hello from tool-envelope.' }),
    });
    expect(msg!.artifact).toMatchObject({ schema: 'durable-workflow.v2.mcp-tool-result', status: 'ok' });
    expect(oracleValidate('dw', msg!.artifact).valid).toBe(true);
    expectValidEnvelopes(kit.outcomeOf('c1')!);
  });

  it.each(ERROR_CATEGORIES)('failure %s: status error, content for the model, artifact the envelope', async (category) => {
    const { runtime } = plainFixture();
    const { kit, invoke } = agentWith(runtime, [{ name: 'fail', args: { category }, id: 'c1' }]);
    const [msg] = await invoke();
    expect(msg!.status).toBe('error');
    expect(msg!.content).toContain(`[${category}/${category}-failure]: Failed with ${category}.`);
    // The artifact is founding MCEC 3.0, which writes MCEC 2026-07's OCR categories as capture-blank (issue #16).
    expect(msg!.artifact).toMatchObject({ ok: false, error: { category: foundingMcecCategory(category), code: `${category}-failure` } });
    expect(oracleValidate('mcec', msg!.artifact).valid).toBe(true);
    expectValidEnvelopes(kit.outcomeOf('c1')!);
  });

  it('a thrown error, a timeout and bad arguments are error ToolMessages with envelopes', async () => {
    const { runtime } = plainFixture();
    const { kit, invoke } = agentWith(
      runtime,
      [
        { name: 'boom', args: {}, id: 't1' },
        { name: 'slow', args: {}, id: 't2' },
        { name: 'notes_read', args: { id: 42 }, id: 't3' },
      ],
      { contract: 'contextos' },
    );
    const msgs = await invoke();
    expect(msgs.map((m) => [m.tool_call_id, m.status, (m.artifact as { error?: string }).error !== undefined])).toEqual([
      ['t1', 'error', true],
      ['t2', 'error', true],
      ['t3', 'error', true],
    ]);
    expect(msgs.map((m) => String(m.content).split(']')[0])).toEqual([
      'Tool error [internal/unhandled-exception',
      'Tool error [timeout/deadline-exceeded',
      'Tool error [invalid-argument/invalid-arguments',
    ]);
    for (const m of msgs) expect(oracleValidate('contextos-result', m.artifact).valid).toBe(true);
    for (const id of ['t1', 't2', 't3']) expectValidEnvelopes(kit.outcomeOf(id)!);
  });

  for (const governedRun of [false, true]) {
    describe(governedRun ? 'a paused destructive call under a governed runtime (SQLite)' : 'a destructive call (plain runtime: from the approval mode)', () => {
      async function paused() {
        const fx = await fixture(governedRun);
        cleanups.push(fx.cleanup);
        const { source } = fx;
        const { kit, invoke } = agentWith(source, [{ name: 'repo_delete', args: { name: 'old-site' }, id: 'd1' }]);
        const [msg] = await invoke();
        expect(msg!.status).toBe('error');
        expect(msg!.content).toMatch(/^Tool call paused, waiting for a human approval \(do not call it again\) \[elevation\/approval-required\]/);
        expect(msg!.artifact).toMatchObject({ ok: false, error: { category: 'elevation', code: 'approval-required' } });
        expect(fx.counters.deletes).toEqual([]);
        expectValidEnvelopes(kit.outcomeOf('d1')!);
        return { ...fx, kit };
      }

      it('approved: runs exactly once; the final ToolMessage succeeds', async () => {
        const { kit, counters, governed, store } = await paused();
        const final = await kit.approve('d1', { approver: 'alice' });
        expect(final).toMatchObject({ status: 'success', tool_call_id: 'd1', name: 'repo_delete', content: JSON.stringify({ deleted: 'old-site' }) });
        expect(counters.deletes).toEqual(['old-site']);
        await expect(kit.approve('d1', { approver: 'alice' })).rejects.toMatchObject({ code: 'approval-not-pending' });
        expect(counters.deletes).toEqual(['old-site']);
        expectValidEnvelopes(kit.outcomeOf('d1')!);
        if (governed && store) {
          await governed.flush();
          expect((await store.listAudit({ tool: 'repo.delete' })).records.map((r) => r.status).sort()).toEqual(['completed', 'paused']);
        }
      });

      it('rejected: never runs; the final ToolMessage says so', async () => {
        const { kit, counters, governed, store } = await paused();
        const final = await kit.reject('d1', { approver: 'bob', reason: 'change freeze' });
        expect(final.status).toBe('error');
        expect(final.content).toMatch(/^Tool call not approved \(do not retry it\) \[elevation\/approval-rejected\]: Rejected by bob: change freeze/);
        expect(counters.deletes).toEqual([]);
        expectValidEnvelopes(kit.outcomeOf('d1')!);
        if (governed && store) {
          await governed.flush();
          expect((await store.listAudit({ tool: 'repo.delete' })).records.map((r) => r.status).sort()).toEqual(['paused', 'rejected']);
        }
      });
    });
  }
});
