/**
 * The gateway's one object for tasks: it learns which upstreams can run tasks (attached after
 * each connect), says what to advertise, and serves `tools/call` and `tasks/*` for callers named
 * by their verified identity. Everything the gateway needs from src/mcp/tasks goes through here.
 */
import type { Transport } from '@modelcontextprotocol/client';
import type { JsonObject, ToolOutcome } from 'tool-envelope/core';
import type { Identity } from '../../governance/identity.js';
import type { TaskHandleTable } from '../../store/index.js';
import { type ApprovalTasks, createApprovalTask } from './approval-tasks.js';
import { tapTaskDispatch } from './dispatch.js';
import type { TaskCaller } from './handles.js';
import {
  type TaskCallAnswer,
  type TaskRouter,
  type TaskRouterOptions,
  type TaskUpstream,
  createTaskRouter,
  declaresTasks,
  tasksExtensionFor,
  upstreamHasTasks,
} from './router.js';

/**
 * The caller a handle is bound to, from the verified identity (never from the request): its
 * tenant, its principal, and the 2025-era session when there is one.
 */
export function taskCallerOf(identity: Identity, sessionId?: string): TaskCaller {
  const p = identity.principal;
  return { tenant: p.tenant_id ?? '', principal: `${p.kind}:${p.id}`, ...(sessionId ? { session: sessionId } : {}) };
}

/** What the gateway knows of a connected upstream when it attaches it. */
export interface AttachedUpstream {
  name: string;
  /** The SDK transport the upstream's client is connected on (after `client.connect`). */
  transport: Transport;
  /** The negotiated protocol version; the extension is routed on the 2026-07-28 era only. */
  protocolVersion: string | undefined;
  /** The upstream's server capabilities (from `server/discover`). */
  capabilities: unknown;
}

export interface GatewayTasksOptions {
  taskHandles: TaskHandleTable;
  /** The gateway's client info, sent in the per-request envelope of its raw task requests. */
  clientInfo: { name: string; version: string };
  /** The gateway's enveloping of an upstream tool result (as for any call). */
  envelope: TaskRouterOptions['envelope'];
  /** Where a task's end is recorded, once (see {@link TaskRouterOptions.onFinal}). */
  onFinal?: TaskRouterOptions['onFinal'];
  handleTtlMs?: number;
  /** Paused calls as tasks for declaring callers (approval-tasks.ts); with it the extension is always advertised. */
  approvals?: ApprovalTasks;
}

/** The gateway's tasks (see the module comment). */
export interface GatewayTasks {
  /** Registers (or, after a reconnect, replaces) an upstream; true when it can run tasks. */
  attach(upstream: AttachedUpstream): boolean;
  /** Forgets an upstream (closed for good). */
  detach(name: string): void;
  /** Whether tool calls to this upstream go through the router. */
  routes(upstream: string): boolean;
  /** The `capabilities.extensions` entries to advertise (undefined: none). */
  extensions(): Record<string, JsonObject> | undefined;
  /** A `tools/call` to a routed upstream; `envelope` is the request's lifted per-request `_meta` envelope (or its `_meta`). */
  callTool(upstream: string, tool: string, params: JsonObject, call: TaskCallOf & TaskCallExtras): Promise<TaskCallAnswer>;
  /** `tasks/get`, `tasks/update`, `tasks/cancel`; throws `TaskRpcError` for the JSON-RPC error to answer. */
  request(method: string, params: JsonObject, call: TaskCallOf): Promise<JsonObject>;
  /** A paused call as a task, for a caller that declared the extension (undefined: answered as `paused`). */
  pausedTask(paused: ToolOutcome, tool: string, call: TaskCallOf): Promise<JsonObject | undefined>;
  /** Whether a call's lifted `_meta` envelope (or its `_meta`) declares the extension. */
  declares(envelope: unknown): boolean;
  /** Stops watching tasks (the gateway closes). */
  close(): void;
}

/** Who calls and what they declared. */
export interface TaskCallOf {
  identity: Identity;
  sessionId?: string;
  envelope: unknown;
  /**
   * On `tasks/update`: the request's `inputResponses` where the SDK lifted them off the params
   * (`ctx.mcpReq.inputResponses` in an SDK v2 handler); else the params' own are used.
   */
  inputResponses?: unknown;
  signal?: AbortSignal;
}

/**
 * What a `tools/call` adds to {@link TaskCallOf}: its deadline, its HTTP headers (a URL upstream's
 * `Mcp-Param-*`), and what the task's handle keeps of the call (its audit record's id).
 */
export interface TaskCallExtras {
  deadlineMs: number;
  headers?: Record<string, string> | undefined;
  context?: JsonObject | undefined;
}

const MODERN = '2026-07-28';
// The router's default handle lifetime, for an approval's task too.
const DAY_MS = 86_400_000;

/** Creates the gateway's tasks. */
export function createGatewayTasks(options: GatewayTasksOptions): GatewayTasks {
  const upstreams = new Map<string, TaskUpstream>();
  const router: TaskRouter = createTaskRouter({
    taskHandles: options.taskHandles,
    upstream: (name) => upstreams.get(name),
    envelope: options.envelope,
    ...(options.onFinal ? { onFinal: options.onFinal } : {}),
    ...(options.handleTtlMs !== undefined ? { handleTtlMs: options.handleTtlMs } : {}),
    ...(options.approvals ? { approvals: options.approvals } : {}),
  });
  const ctxOf = (call: TaskCallOf) => ({
    caller: taskCallerOf(call.identity, call.sessionId),
    declaresTasks: declaresTasks({ _meta: call.envelope }),
    ...(call.signal ? { signal: call.signal } : {}),
  });
  const tasks: GatewayTasks = {
    attach(up) {
      const modern = up.protocolVersion !== undefined && up.protocolVersion >= MODERN;
      if (!modern || !upstreamHasTasks(up.capabilities)) {
        upstreams.delete(up.name);
        return false;
      }
      const protocolVersion = up.protocolVersion as string;
      const dispatch = tapTaskDispatch(up.transport, {
        envelope: () => ({
          'io.modelcontextprotocol/protocolVersion': protocolVersion,
          'io.modelcontextprotocol/clientInfo': { ...options.clientInfo },
          'io.modelcontextprotocol/clientCapabilities': {},
        }),
      });
      upstreams.set(up.name, { name: up.name, tasks: true, dispatch });
      return true;
    },
    detach(name) {
      upstreams.delete(name);
    },
    routes(name) {
      return upstreams.has(name);
    },
    extensions() {
      return options.approvals ? tasksExtensionFor([{ tasks: true }]) : tasksExtensionFor([...upstreams.values()]);
    },
    async callTool(name, tool, params, call) {
      const up = upstreams.get(name);
      if (!up) return { kind: 'rpc-error', error: { code: -32603, message: `upstream ${name} does not run tasks` } };
      const ctx = {
        ...ctxOf(call),
        deadlineMs: call.deadlineMs,
        ...(call.headers ? { headers: call.headers } : {}),
        ...(call.context ? { context: call.context } : {}),
      };
      return router.callTool(up, tool, params, ctx);
    },
    request(method, params, call) {
      const lifted = call.inputResponses !== undefined && method === 'tasks/update' ? { ...params, inputResponses: call.inputResponses as JsonObject } : params;
      return router.request(method, lifted, ctxOf(call));
    },
    async pausedTask(paused, tool, call) {
      if (!options.approvals || !declaresTasks({ _meta: call.envelope })) return undefined;
      return createApprovalTask(options.taskHandles, paused, tool, taskCallerOf(call.identity, call.sessionId), options.handleTtlMs ?? DAY_MS, Date.now());
    },
    declares(envelope) {
      return declaresTasks({ _meta: envelope });
    },
    close() {
      router.close();
    },
  };
  return tasks;
}
