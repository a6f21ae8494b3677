/**
 * tool-envelope/governance: the one governance pipeline (policy, identity, idempotency, signed
 * approvals, audit) that the governed runtime and the MCP gateway run every call through.
 *
 * @example
 * ```ts
 * import { GovernancePipeline } from 'tool-envelope/governance';
 * const pipeline = new GovernancePipeline({ store, executorFor: (tool) => (call) => callUpstream(tool, call.args) });
 * const outcome = await pipeline.run(
 *   { tool: 'repo.delete', ceiling: 'destructive', args: { name: 'x' }, principalChain: [{ kind: 'user', id: 'alice' }],
 *     toolCallId: 'c1', runId: 'r1', traceId: '4bf92f3577b34da6a3ce929d0e0e4736' },
 *   (call) => callUpstream('repo.delete', call.args),
 * ); // 'paused': approve with pipeline.approve(id, { approver: 'user:bob' })
 * ```
 */
export * from './pipeline.js';
export { ApprovalDesk, approverInChain } from './approvals.js';
export * from './approval-signature.js';
export * from './policy.js';
export * from './idempotency.js';
export * from './identity.js';
