import { describe, expect, it } from 'vitest';
import { agentReader, nextStep } from '../examples/agent-reader.js';
import { failure, success, toolError } from '../src/core/index.js';

describe('README example for agent builders (examples/agent-reader.ts)', () => {
  it('branches the same way on a plain MCP server: success, and a protocol-level argument error', async () => {
    const steps = await agentReader();
    expect(steps[0]).toMatchObject({ tool: 'read_graph', ok: true, next: 'use the result' });
    // The memory server reports the bad argument as an isError result ("MCP error -32602: Input validation error: ...").
    expect(steps[1]).toMatchObject({ tool: 'create_entities', ok: false, category: 'invalid-argument', next: 'fix the arguments' });
  });

  it('chooses the next step from the category alone', () => {
    expect(nextStep(success({}))).toBe('use the result');
    expect(nextStep(failure(toolError('invalid-argument', 'bad', 'x')))).toBe('fix the arguments');
    expect(nextStep(failure(toolError('timeout', 't', 'x')))).toBe('retry later');
    expect(nextStep(failure(toolError('internal', 'boom', 'x')))).toBe('give up and report');
    expect(nextStep(failure(toolError('focus', 'f', 'x')))).toBe('retry');
  });
});
