/**
 * Runtime events for observability (tracing, audit, metrics). Costs one array
 * length test per event when nobody listens. Listeners run synchronously; a
 * listener that throws is reported as a process warning and never changes the
 * outcome.
 */
import { ToolEnvelopeError, type ToolCall, type ToolOutcome } from 'tool-envelope/core';
import type { CallIdentity, ProgressReport } from './context.js';
import type { ToolDefinition } from './define.js';
import type { CallIds } from './ids.js';
import type { Session } from './session.js';

/**
 * One invocation as listeners see it. The same object is passed to
 * `invoke:start` and `invoke:end` (with `outcome` set), so a listener can
 * keep per-call state in a `WeakMap` keyed by it (e.g. an OpenTelemetry span).
 */
export interface Invocation extends CallIdentity {
  readonly tool: ToolDefinition;
  /** The arguments as given (before validation). */
  readonly args: unknown;
  readonly session: Session | undefined;
  /** Wall-clock start, epoch milliseconds. */
  readonly startedAt: number;
  /** False when the outcome was synthesized without running the handler (blocked, paused, ...). */
  readonly ran: boolean;
  /** Set when the invocation ended. */
  outcome: ToolOutcome | undefined;
}

/** The events a runtime emits and their payloads. */
export interface RuntimeEventMap {
  'invoke:start': Invocation;
  'invoke:end': Invocation;
  'invoke:progress': ProgressReport & { invocation: Invocation | undefined };
}

/** A runtime event name. */
export type RuntimeEvent = keyof RuntimeEventMap;

/** A listener for one event. */
export type RuntimeListener<E extends RuntimeEvent> = (payload: RuntimeEventMap[E]) => void;

/**
 * The listener lists of one runtime. The arrays are replaced, never mutated,
 * so an emit in progress is not disturbed by `on`/`off`.
 */
export class EventHub {
  start: ReadonlyArray<RuntimeListener<'invoke:start'>> = [];
  end: ReadonlyArray<RuntimeListener<'invoke:end'>> = [];
  progress: ReadonlyArray<RuntimeListener<'invoke:progress'>> = [];

  /** Subscribes; returns the function that unsubscribes. */
  on<E extends RuntimeEvent>(event: E, listener: RuntimeListener<E>): () => void {
    const key = slot(event);
    this[key] = [...this[key], listener] as never;
    return () => {
      this[key] = this[key].filter((l) => l !== listener) as never;
    };
  }

  /** True when anyone listens to start or end. */
  get observed(): boolean {
    return this.start.length !== 0 || this.end.length !== 0;
  }
}

function slot(event: RuntimeEvent): 'start' | 'end' | 'progress' {
  switch (event) {
    case 'invoke:start':
      return 'start';
    case 'invoke:end':
      return 'end';
    case 'invoke:progress':
      return 'progress';
    default:
      throw new ToolEnvelopeError('invalid-option', `unknown runtime event ${JSON.stringify(event)}`);
  }
}

/** Calls every listener; a throwing listener becomes a process warning. */
export function emit<P>(listeners: ReadonlyArray<(p: P) => void>, event: RuntimeEvent, payload: P): void {
  for (const l of listeners) {
    try {
      l(payload);
    } catch (e) {
      process.emitWarning(`a ${event} listener threw: ${e instanceof Error ? e.message : String(e)}`, 'ToolEnvelopeWarning');
    }
  }
}

/** Builds the {@link Invocation} listeners receive. */
export function makeInvocation(
  tool: ToolDefinition,
  args: unknown,
  ids: CallIds,
  call: ToolCall | undefined,
  session: Session | undefined,
  startedAt: number,
  ran: boolean,
): Invocation {
  return {
    tool,
    toolName: tool.name,
    args,
    toolCallId: ids.toolCallId,
    runId: ids.runId,
    traceId: ids.traceId,
    sessionId: ids.sessionId,
    policyDecisionId: ids.policyDecisionId,
    call,
    session,
    startedAt,
    ran,
    outcome: undefined,
  };
}
