/** A runtime: a registry of tools, defaults for invocations, and events. */
import { ToolEnvelopeError, type ToolOutcome } from 'tool-envelope/core';
import type { ToolDefinition } from './define.js';
import { EventHub, type RuntimeEvent, type RuntimeListener, emit, makeInvocation } from './events.js';
import { newToolCallId } from './ids.js';
import { type InvokeEnv, type InvokeOptions, type SynthesizeInit, invokeTool, synthesizeOutcome } from './invoke.js';
import { type ToolListing, ToolRegistry } from './registry.js';

export interface RuntimeOptions {
  /** Tools to register. */
  tools?: Iterable<ToolDefinition>;
  /** Use this registry (shared with another runtime or an MCP server) instead of a new one. */
  registry?: ToolRegistry;
  /** Deadline of a call when neither the call nor the tool sets one (default 30 000 ms; `0`: none). */
  defaultTimeoutMs?: number;
  /** The `runId` of calls made without a run context (default: a random UUID per runtime). */
  runId?: string;
  /** Put stacks of unexpected errors into `error.details.stack` (default false: never leak them). */
  includeStack?: boolean;
  /** Most warnings kept per outcome (default 50). */
  maxWarnings?: number;
}

/** A tool runtime. `invoke` always resolves to an outcome for a tool failure. */
export interface Runtime {
  readonly registry: ToolRegistry;
  /** The default `runId`. */
  readonly runId: string;
  /** Registers a tool. */
  register(tool: ToolDefinition): void;
  /** The published listing of every tool. */
  list(): ToolListing[];
  /** A tool by name. */
  get(name: string): ToolDefinition | undefined;
  /**
   * Invokes a tool by name. Resolves to the outcome whatever the handler does;
   * rejects only with a `ToolEnvelopeError` for `unknown-tool` (a protocol
   * error on MCP, not a tool failure), a `closed` session or a bad option.
   */
  invoke(name: string, args?: unknown, options?: InvokeOptions): Promise<ToolOutcome>;
  /**
   * Builds (and emits as `invoke:start`/`invoke:end`, with `ran: false`) the
   * outcome of a call that does not run the handler: blocked, paused, rejected, replayed.
   */
  outcome(name: string, init: SynthesizeInit): ToolOutcome;
  /** Subscribes to an event; returns the unsubscribe function. */
  on<E extends RuntimeEvent>(event: E, listener: RuntimeListener<E>): () => void;
}

function unknownTool(name: string): ToolEnvelopeError {
  return new ToolEnvelopeError('unknown-tool', `no tool named ${JSON.stringify(name)} is registered`);
}

/**
 * Creates a runtime.
 *
 * @example
 * ```ts
 * const runtime = createRuntime({ tools: [readText], defaultTimeoutMs: 5000 });
 * const off = runtime.on('invoke:end', (inv) => console.log(inv.toolName, inv.outcome?.status));
 * const outcome = await runtime.invoke('fs.read', { path: 'README.md' });
 * off();
 * ```
 */
export function createRuntime(options?: RuntimeOptions): Runtime {
  const registry = options?.registry ?? new ToolRegistry();
  if (options?.tools !== undefined) for (const t of options.tools) registry.register(t);
  const defaultTimeoutMs = options?.defaultTimeoutMs ?? 30_000;
  if (typeof defaultTimeoutMs !== 'number' || Number.isNaN(defaultTimeoutMs) || defaultTimeoutMs < 0) {
    throw new ToolEnvelopeError('invalid-option', 'defaultTimeoutMs must be a non-negative number');
  }
  const maxWarnings = options?.maxWarnings ?? 50;
  if (!Number.isSafeInteger(maxWarnings) || maxWarnings < 1) throw new ToolEnvelopeError('invalid-option', 'maxWarnings must be a positive integer');
  const events = new EventHub();
  const env: InvokeEnv = {
    defaultTimeoutMs: defaultTimeoutMs === 0 ? Number.POSITIVE_INFINITY : defaultTimeoutMs,
    runId: options?.runId ?? newToolCallId(),
    events,
    includeStack: options?.includeStack === true,
    maxWarnings,
  };
  return {
    registry,
    runId: env.runId,
    register: (tool) => {
      registry.register(tool);
    },
    list: () => registry.list(),
    get: (name) => registry.get(name),
    invoke(name, args, invokeOptions) {
      const def = registry.get(name);
      if (def === undefined) return Promise.reject(unknownTool(name));
      return invokeTool(def, args, invokeOptions, env);
    },
    outcome(name, init) {
      const def = registry.get(name);
      if (def === undefined) throw unknownTool(name);
      const o = synthesizeOutcome(def, init, env);
      if (events.observed) {
        const ids = {
          toolCallId: o.toolCallId!,
          runId: o.runId!,
          traceId: o.traceId!,
          sessionId: o.sessionId ?? undefined,
          policyDecisionId: o.policyDecisionId,
        };
        const inv = makeInvocation(def, init.call?.args, ids, init.call, init.session, Date.now() - (o.latencyMs ?? 0), false);
        emit(events.start, 'invoke:start', inv);
        inv.outcome = o;
        emit(events.end, 'invoke:end', inv);
      }
      return o;
    },
    on: (event, listener) => events.on(event, listener),
  };
}
