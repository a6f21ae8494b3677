// The bridge every adapter shares: typed errors for misuse, the gate, decisions, and what it remembers.
import { describe, expect, it } from 'vitest';
import { defineTool } from '../runtime/define.js';
import { createRuntime, type Runtime } from '../runtime/runtime.js';
import { aiSdkTools } from './ai-sdk/index.js';
import { ToolBridge, frameworkToolName, isGoverned } from './bridge.js';
import { langchainTools } from './langchain/index.js';
import { openAiAgentsTools } from './openai-agents/index.js';
import { cleanupsAfterEach, governedFixture, plainFixture } from './test-support/tools.js';

const cleanups = cleanupsAfterEach();
const del = (callId: string) => ({ tool: 'repo.delete', callId, args: { name: 'x' } });

describe('ToolBridge', () => {
  it('rejects bad options with typed errors', () => {
    const { runtime } = plainFixture();
    expect(() => new ToolBridge('t', {} as Runtime)).toThrow(expect.objectContaining({ code: 'invalid-option' }));
    expect(() => new ToolBridge('t', runtime, { approveFrom: 'admin' as never })).toThrow(expect.objectContaining({ code: 'invalid-option' }));
    expect(() => new ToolBridge('t', runtime, { remember: 0 })).toThrow(expect.objectContaining({ code: 'invalid-option' }));
    expect(() => new ToolBridge('t', runtime, { tools: ['nope'] }).tools()).toThrow(expect.objectContaining({ code: 'unknown-tool' }));
    for (const make of [aiSdkTools, openAiAgentsTools, langchainTools]) {
      expect(() => make(runtime, { contract: 'xml' as never })).toThrow(expect.objectContaining({ code: 'unknown-contract' }));
    }
  });

  it('refuses two tools under one framework name, in every adapter, naming both tools and the name', () => {
    const runtime = createRuntime({
      tools: [
        defineTool({ name: 'a.b', description: 'dot', approvalMode: 'read_only', handler: () => 'dot' }),
        defineTool({ name: 'a_b', description: 'underscore', approvalMode: 'read_only', handler: () => 'underscore' }),
      ],
    });
    const names = (kit: ReturnType<typeof aiSdkTools> | ReturnType<typeof openAiAgentsTools> | ReturnType<typeof langchainTools>): string[] =>
      Array.isArray(kit.tools) ? kit.tools.map((t) => t.name) : Object.keys(kit.tools);
    for (const make of [aiSdkTools, openAiAgentsTools, langchainTools]) {
      // Default renaming: `a.b` becomes `a_b`, the other tool's name.
      expect(() => make(runtime)).toThrow(
        expect.objectContaining({ code: 'invalid-option', message: expect.stringMatching(/"a\.b" and "a_b" share the framework name "a_b"/) }),
      );
      expect(() => make(runtime, { frameworkName: () => 'same' })).toThrow(
        expect.objectContaining({ code: 'invalid-option', message: expect.stringMatching(/"a\.b" and "a_b" share the framework name "same"/) }),
      );
      // Told apart, or one left out: both ways out work.
      expect(names(make(runtime, { frameworkName: (t) => t.replace('.', '__') }))).toEqual(['a__b', 'a_b']);
      expect(names(make(runtime, { tools: ['a.b'] }))).toEqual(['a_b']);
    }
  });

  it('rejects bad decisions with typed errors, and decides a call once', async () => {
    const { runtime, counters } = plainFixture();
    const bridge = new ToolBridge('t', runtime);
    await expect(bridge.decide('nope', { approved: true, approver: 'a' })).rejects.toMatchObject({ code: 'unknown-approval' });
    expect((await bridge.gate(del('c1'))).kind).toBe('approval');
    await expect(bridge.decide('c1', { approved: true, approver: '' })).rejects.toMatchObject({ code: 'invalid-option' });
    expect(await bridge.decide('c1', { approved: true, approver: 'a' })).toMatchObject({ status: 'completed' });
    await expect(bridge.decide('c1', { approved: false, approver: 'b' })).rejects.toMatchObject({ code: 'approval-not-pending' });
    expect(counters.deletes).toEqual(['x']);
  });

  it('never runs a paused call that the framework executes without a decision', async () => {
    const { runtime, counters } = plainFixture();
    const bridge = new ToolBridge('t', runtime);
    await bridge.gate(del('c1'));
    expect(await bridge.run(del('c1'))).toMatchObject({ status: 'paused', error: { code: 'approval-required' } });
    expect(counters.deletes).toEqual([]);
  });

  it('a destructive call the framework executes without asking the gate first is paused, not run', async () => {
    const { runtime, counters } = plainFixture();
    const bridge = new ToolBridge('t', runtime);
    expect(await bridge.run(del('c1'))).toMatchObject({ status: 'paused' });
    expect(counters.deletes).toEqual([]);
    expect(await bridge.decide('c1', { approved: true, approver: 'a' })).toMatchObject({ status: 'completed' });
    expect(counters.deletes).toEqual(['x']);
  });

  it('approveFrom: false runs destructive tools without asking; a lower mode asks earlier', async () => {
    const { runtime, counters } = plainFixture();
    expect((await new ToolBridge('t', runtime, { approveFrom: false }).gate(del('c1'))).kind).toBe('run');
    expect((await new ToolBridge('t', runtime, { approveFrom: 'read_only' }).gate({ tool: 'notes.read', callId: 'c2', args: { id: 'welcome' } })).kind).toBe(
      'approval',
    );
    expect(counters).toEqual({ deletes: [], reads: 0 });
  });

  it('remembers the last `remember` outcomes, oldest forgotten first, and reports each to onOutcome', async () => {
    const { runtime } = plainFixture();
    const seen: string[] = [];
    const bridge = new ToolBridge('t', runtime, { remember: 2, onOutcome: (o, c) => seen.push(`${c.callId}:${o.status}`) });
    for (const id of ['a', 'b', 'c']) await bridge.run({ tool: 'notes.read', callId: id, args: { id: 'welcome' } });
    expect([bridge.outcomeOf('a'), bridge.outcomeOf('b')?.status, bridge.outcomeOf('c')?.status]).toEqual([undefined, 'ok', 'ok']);
    expect(seen).toEqual(['a:ok', 'b:ok', 'c:ok']);
  });

  it('names tools for the frameworks, and tells a governed runtime from a plain one', async () => {
    expect(frameworkToolName('notes.read')).toBe('notes_read');
    expect(frameworkToolName('a/b-c_d')).toBe('a_b-c_d');
    const fx = await governedFixture();
    cleanups.push(fx.cleanup);
    expect([isGoverned(fx.governed), isGoverned(fx.governed.runtime)]).toEqual([true, false]);
  });

  it('under a governed runtime, a framework that skips the gate still cannot run a paused call', async () => {
    const fx = await governedFixture();
    cleanups.push(fx.cleanup);
    const bridge = new ToolBridge('t', fx.governed);
    expect(await bridge.run(del('g1'))).toMatchObject({ status: 'paused', metadata: { approvalId: expect.stringMatching(/^apr_/) } });
    expect(fx.counters.deletes).toEqual([]);
    expect(await fx.governed.approvals()).toHaveLength(1);
    expect(await bridge.decide('g1', { approved: true, approver: 'alice' })).toMatchObject({ status: 'completed' });
    expect(fx.counters.deletes).toEqual(['x']);
  });
});
