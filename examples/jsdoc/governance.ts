// The @example of each public entry point of tool-envelope/governance (see core.ts).
import { ApprovalDesk, compilePolicy, GovernancePipeline, IdempotencyGuard, loadPolicyFile, parsePolicy } from '../../src/governance/index.js';
import { createGovernedRuntime, createRuntime, type Runtime } from '../../src/runtime/index.js';
import type { Store } from '../../src/store/index.js';

export function example_compilePolicy() {
  //#region compilePolicy
  const policy = compilePolicy({
    version: 1,
    rules: [
      { name: 'no-prod-deletes', match: { tool: 'db.*', mode: 'destructive', tenant: 'prod' }, effect: 'deny' },
      { name: 'http', match: { mode: 'network' }, effect: 'allow', egress: { allow: ['api.example.com'], argPaths: ['url'] } },
    ],
    redact: { 'crm.update': ['/args/customer/ssn'] },
  });
  //#endregion
  return policy;
}

export function example_parsePolicy() {
  //#region parsePolicy
  const policy = parsePolicy('version: 1\nrules:\n  - match: { tool: "fs.*" }\n    effect: allow\n', 'yaml');
  //#endregion
  return policy;
}

export async function example_loadPolicyFile(store: Store) {
  //#region loadPolicyFile
  const policy = await loadPolicyFile('./policy.yaml');
  const governed = createGovernedRuntime({ runtime: createRuntime(), store, policy });
  //#endregion
  return governed;
}

export async function example_GovernancePipeline(store: Store, runtime: Runtime) {
  //#region GovernancePipeline
  const pipeline = new GovernancePipeline({ store, executorFor: (tool) => (call) => runtime.invoke(tool, call.args) });
  //#endregion
  return pipeline;
}

export async function example_ApprovalDesk(pipeline: GovernancePipeline) {
  //#region ApprovalDesk
  const desk = new ApprovalDesk(pipeline);
  await desk.approve('apr_1', { approver: 'user:alice' });
  //#endregion
}

export async function example_IdempotencyGuard(store: Store, runtime: Runtime) {
  //#region IdempotencyGuard
  const guard = new IdempotencyGuard(store);
  const { outcome, replay } = await guard.run({ key: 'order-42', tool: 'orders.create', args: { sku: 'A1' }, toolCallId: 'c1' }, () =>
    runtime.invoke('orders.create', { sku: 'A1' }),
  );
  //#endregion
  return { outcome, replay };
}
