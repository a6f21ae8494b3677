/**
 * Step 2 of `tool-envelope gateway`: the parts built from the settings (observability, approval
 * notices, the store, the governance, the gateway over its upstreams), or a usage error. A part
 * that fails to start closes the ones started before it.
 */
import { isToolEnvelopeError } from 'tool-envelope/core';
import { Gateway } from '../../mcp/gateway/gateway.js';
import { GatewayGovernance } from '../../mcp/gateway/governor.js';
import type { TokenAuthenticator } from '../../mcp/serve/auth.js';
import { createMemoryStore, openStore } from '../../store/index.js';
import type { Store } from '../../store/types.js';
import { tokenRoleWarnings } from '../token-roles.js';
import { approvalWaitFlag, approvalWiring } from './approvals.js';
import { modeNameWarnings } from './mode-names.js';
import { type Observe, startObserve } from './observe.js';
import { acknowledgeHangup, reloadPolicyOnChange } from './policy-reload.js';
import type { CliIo } from '../io.js';
import type { GatewaySettings } from './parse.js';
import { looseFileWarning } from '../audit-common.js';
import { hidePassword } from './store-location.js';

/** The running parts, and how to stop them in order. */
export interface Configured {
  gateway: Gateway;
  governance: GatewayGovernance;
  /** The store the audit log goes to; `undefined` with `--no-store`. */
  store: Store | undefined;
  /** The store the governance keeps its state in (in memory with `--no-store`). */
  governed: Store;
  observe: Observe;
  close(): Promise<void>;
}

/** A usage error, or a fatal one already logged (`fatal: true`). */
export type ConfigureProblem = { message: string; fatal?: true };

export async function configureGateway(settings: GatewaySettings, io: CliIo): Promise<Configured | ConfigureProblem> {
  const observe = await startObserve(settings.observeFlags, io, settings.values['insecure-no-auth'] === true);
  if (typeof observe === 'string') return { message: observe };
  const tokensFile = settings.values['auth-tokens-file'];
  const roles = (settings.auth as Partial<TokenAuthenticator> | undefined)?.roles ?? [];
  if (typeof tokensFile === 'string') for (const w of tokenRoleWarnings(roles, tokensFile)) observe.log(`WARNING: ${w}`);
  settings.auth = observe.auth(settings.auth);
  const approvals = await approvalWiring(settings.values, settings.config?.notify, observe.event);
  if (typeof approvals === 'string') return { message: approvals };
  const approvalWaitMs = approvalWaitFlag(settings.values, settings.config?.approvalWaitMs);
  if (typeof approvalWaitMs === 'string') return { message: approvalWaitMs };
  let store: Store | undefined;
  try {
    if (settings.storePath !== undefined) store = observe.store(await openStore(settings.storePath, { onLooseFile: looseFileWarning('gateway', io) }));
  } catch (err) {
    observe.fatal(`cannot open the store ${hidePassword(settings.storePath!)}: ${(err as Error).message}`);
    return { message: '', fatal: true };
  }
  // Without a store, policy, idempotency and approvals still apply, in memory (nothing is logged).
  const governed = store ?? observe.store(createMemoryStore());
  const governance = new GatewayGovernance({
    store: governed,
    ...(settings.policy ? { policy: settings.policy } : {}),
    ...(settings.requireIdempotencyKeyFrom !== undefined ? { requireIdempotencyKeyFrom: settings.requireIdempotencyKeyFrom } : {}),
    ...(settings.principals.length > 0 ? { principalChain: settings.principals } : {}),
    ...(settings.approvalTtlMs !== undefined ? { approvalTtlMs: settings.approvalTtlMs } : {}),
    ...(settings.approvalPollMs !== undefined ? { approvalPollMs: settings.approvalPollMs } : {}),
    audit: store
      ? { commit: settings.auditCommit, redact: settings.redaction, onError: (err: unknown) => observe.log(`audit: ${(err as Error).message}`) }
      : false,
    onError: (err) => observe.log(`approvals: ${(err as Error).message}`),
    onApprovalEvent: observe.approvalEvents(approvals.onApprovalEvent),
    ...(approvals.runWindowMs !== undefined ? { approvalRunWindowMs: approvals.runWindowMs } : {}),
    ...(approvalWaitMs !== undefined ? { approvalWaitMs } : {}),
  });
  let gateway: Gateway;
  try {
    gateway = await Gateway.start(gatewayOptions(settings, governance, governed, observe));
  } catch (err) {
    await governance.close();
    await store?.close();
    await observe.close();
    observe.fatal(isToolEnvelopeError(err) ? err.message : String(err));
    return { message: '', fatal: true };
  }
  // The tools were listed at start (for the governance): a mode naming none of them is told once.
  const listed = gateway.listedTools();
  if (listed) for (const w of modeNameWarnings(settings.modes, settings.upstreams, listed)) observe.log(`WARNING: ${w}`);
  observe.watch({ upstreams: gateway.upstreams, store: governed, auditQueue: () => governance.pipeline.writer?.pending ?? 0 });
  // SIGHUP or a change of the file puts a new policy in force, or logs why not (policy-reload.ts).
  const { policy, policyFile } = settings;
  // Sessions list their tools again: what a policy hides from a caller may have changed.
  const targets = { pipeline: governance.pipeline, event: observe.event, applied: () => gateway.toolsChanged() };
  const stopReload = policy && policyFile !== undefined ? reloadPolicyOnChange(policyFile, policy, targets) : acknowledgeHangup(observe.log);
  return {
    gateway,
    governance,
    store,
    governed,
    observe,
    async close() {
      stopReload();
      await gateway.close();
      await approvals.close();
      await store?.close();
      await observe.close();
    },
  };
}

function gatewayOptions(settings: GatewaySettings, governance: GatewayGovernance, governed: Store, observe: Observe): Parameters<typeof Gateway.start>[0] {
  const { upstreamFlags } = settings;
  return {
    governance,
    // Task handles live in the store (in memory with --no-store), bound to their callers.
    taskHandles: governed.taskHandles,
    // A paused call of a client that declared the tasks extension is answered as a task (#37).
    approvalTasks: true,
    upstreams: settings.upstreams,
    dialect: settings.dialect,
    modes: settings.modes,
    log: observe.log,
    ...(observe.governor && { governor: observe.governor }),
    ...(settings.deadlineMs !== undefined ? { deadlineMs: settings.deadlineMs } : {}),
    ...(settings.previewLimitBytes !== undefined ? { previewLimitBytes: settings.previewLimitBytes } : {}),
    ...(settings.healthIntervalMs !== undefined ? { supervision: { healthIntervalMs: settings.healthIntervalMs } } : {}),
    outputSchema: upstreamFlags.outputSchema,
    ...(upstreamFlags.maxResultBytes !== undefined ? { maxResultBytes: upstreamFlags.maxResultBytes } : {}),
    ...(upstreamFlags.maxCallsInFlight !== undefined ? { maxCallsInFlight: upstreamFlags.maxCallsInFlight } : {}),
    ...(upstreamFlags.toolFailureMeta ? { toolFailureMeta: true } : {}),
  };
}
