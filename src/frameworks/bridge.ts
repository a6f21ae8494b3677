/**
 * What every framework adapter shares: one framework tool call (keyed by its call id) through a plain
 * or governed runtime, with the approval gate taken when the model's call arrives. A paused call waits
 * for {@link ToolBridge.decide} (the tool runs exactly once, or never); the framework's `execute` then
 * gets the settled outcome instead of running the tool again.
 */
import {
  ToolEnvelopeError,
  type JsonObject,
  type ToolOutcome,
  toolError,
  type ApprovalMode,
  compareApprovalModes,
  isApprovalMode,
  isSuccessStatus,
} from 'tool-envelope/core';
import type { ToolDefinition } from '../runtime/define.js';
import type { GovernedInvokeOptions, GovernedRuntime } from '../runtime/governed.js';
import type { ToolListing } from '../runtime/registry.js';
import type { Runtime } from '../runtime/runtime.js';

/** What the adapters run tools on: a runtime, or a governed runtime (policy, idempotency, audit). */
export type ToolSource = Runtime | GovernedRuntime;

/** One framework call, as the bridge sees it. */
export interface FrameworkCall {
  /** The tool-envelope tool name. */
  tool: string;
  /** The framework's call id. */
  callId: string;
  args: unknown;
}

/** Options shared by the three adapters. */
export interface BridgeOptions {
  /** Only these tools (by tool-envelope name; default: every registered tool). */
  tools?: string[];
  /** Plain runtime only: tools whose approval mode is at least this wait for a human (default `destructive`; `false`: never). */
  approveFrom?: ApprovalMode | false;
  /**
   * Governed runtime only: options of each governed call (principal chain, idempotency key, ...).
   * Default idempotency key: `<framework>:<call id>`, so a framework step retried with the same call id runs once.
   */
  callOptions?: (call: FrameworkCall) => GovernedInvokeOptions;
  /**
   * The name the framework knows a tool by (default: the tool name with characters other than `A-Z a-z 0-9 _ -` as `_`).
   * Two tools under one name make the toolkit throw `invalid-option`.
   */
  frameworkName?: (tool: string) => string;
  /** Called with every settled outcome (paused, rejected and blocked ones included). */
  onOutcome?: (outcome: ToolOutcome, call: FrameworkCall) => void;
  /** Calls remembered for {@link ToolBridge.outcomeOf} (default 1000, oldest forgotten first). */
  remember?: number;
}

/** The gate's answer for one call: run it (or hand over what already ran), or wait for a human. */
export type Gate = { kind: 'run' } | { kind: 'approval'; reason: string; outcome: ToolOutcome };

/** A human's decision on a paused call. */
export interface ApprovalDecision {
  approved: boolean;
  /** Who decided (required: the audit log records it). */
  approver: string;
  reason?: string;
}

interface Entry {
  call: FrameworkCall;
  /** Set while a decision is awaited. */
  paused?: ToolOutcome;
  /** The final outcome, when it is known before the framework's `execute` asks for it. */
  settled?: ToolOutcome;
  /** Settled by a human's decision: the framework, asking again, is told it was an approval. */
  decided?: boolean;
}

/** True when `source` is a governed runtime. */
export function isGoverned(source: ToolSource): source is GovernedRuntime {
  return typeof (source as GovernedRuntime).approve === 'function' && typeof (source as GovernedRuntime).runtime === 'object';
}

/** The default framework name of a tool: `notes.read` → `notes_read`. */
export function frameworkToolName(tool: string): string {
  return tool.replace(/[^A-Za-z0-9_-]/g, '_');
}

/** One framework's bridge to a runtime: the gate, the decisions and the outcomes by call id. */
export class ToolBridge {
  readonly runtime: Runtime;
  readonly governed: GovernedRuntime | undefined;
  private readonly entries = new Map<string, Entry>();
  private readonly outcomes = new Map<string, ToolOutcome>();
  private readonly approveFrom: ApprovalMode | false;
  private readonly remember: number;

  constructor(
    readonly framework: string,
    source: ToolSource,
    private readonly options: BridgeOptions = {},
  ) {
    if (!source || typeof source.invoke !== 'function')
      throw new ToolEnvelopeError('invalid-option', `${framework}: a runtime or a governed runtime is required`);
    this.governed = isGoverned(source) ? source : undefined;
    this.runtime = isGoverned(source) ? source.runtime : source;
    this.approveFrom = options.approveFrom ?? 'destructive';
    if (this.approveFrom !== false && !isApprovalMode(this.approveFrom))
      throw new ToolEnvelopeError('invalid-option', `approveFrom: unknown mode ${String(this.approveFrom)}`);
    this.remember = options.remember ?? 1000;
    if (!Number.isSafeInteger(this.remember) || this.remember < 1) throw new ToolEnvelopeError('invalid-option', 'remember must be a positive integer');
  }

  /** The tools to expose: each with its listing and the name the framework knows it by. */
  tools(): { def: ToolDefinition; listing: ToolListing; name: string }[] {
    const listings = this.runtime.list();
    const wanted = this.options.tools;
    if (wanted) {
      for (const name of wanted)
        if (!listings.some((l) => l.name === name)) throw new ToolEnvelopeError('unknown-tool', `no tool named ${JSON.stringify(name)} is registered`);
    }
    const named = (tool: string): string => (this.options.frameworkName ?? frameworkToolName)(tool);
    const tools = listings
      .filter((l) => !wanted || wanted.includes(l.name))
      .map((listing) => ({ def: this.runtime.get(listing.name)!, listing, name: named(listing.name) }));
    // Frameworks key tools by name: two tools under one name would leave one unreachable, or run the wrong one.
    const owner = new Map<string, string>();
    for (const { listing, name } of tools) {
      const first = owner.get(name);
      if (first !== undefined)
        throw new ToolEnvelopeError(
          'invalid-option',
          `${this.framework}: the tools ${JSON.stringify(first)} and ${JSON.stringify(listing.name)} share the framework name ${JSON.stringify(name)}: rename one, pass frameworkName, or leave one out with tools`,
        );
      owner.set(name, listing.name);
    }
    return tools;
  }

  /** The outcome of a framework call, once known (the latest: paused, then completed, ...). */
  outcomeOf(callId: string): ToolOutcome | undefined {
    return this.outcomes.get(callId);
  }

  /** Asked when the model's call arrives. Asked again for the same call id, it answers the same. */
  async gate(call: FrameworkCall): Promise<Gate> {
    const known = this.entries.get(call.callId);
    if (known?.paused) return { kind: 'approval', reason: reasonOf(known.paused), outcome: known.paused };
    // Frameworks ask again when they resume (the AI SDK revalidates, the Agents SDK re-checks): a decided
    // call stays an approval, so that the framework applies its own record of the decision.
    if (known?.decided && known.settled) return { kind: 'approval', reason: reasonOf(known.settled), outcome: known.settled };
    if (known) return { kind: 'run' };
    if (this.governed) {
      const outcome = await this.governed.invoke(call.tool, call.args, this.governedOptions(call));
      if (outcome.status === 'paused') {
        this.entries.set(call.callId, { call, paused: outcome });
        this.settle(call, outcome);
        return { kind: 'approval', reason: reasonOf(outcome), outcome };
      }
      this.entries.set(call.callId, { call, settled: outcome });
      this.settle(call, outcome);
      return { kind: 'run' };
    }
    const def = this.runtime.get(call.tool);
    if (def === undefined) throw new ToolEnvelopeError('unknown-tool', `no tool named ${JSON.stringify(call.tool)} is registered`);
    if (this.approveFrom === false || compareApprovalModes(def.approvalMode, this.approveFrom) < 0) return { kind: 'run' };
    const paused = this.runtime.outcome(call.tool, {
      status: 'paused',
      error: toolError('elevation', 'approval-required', `Waiting for an approver: ${call.tool} is ${def.approvalMode}.`, {
        details: { frameworkCallId: call.callId },
      }),
      metadata: { framework: this.framework, frameworkCallId: call.callId },
    });
    this.entries.set(call.callId, { call, paused });
    this.settle(call, paused);
    return { kind: 'approval', reason: reasonOf(paused), outcome: paused };
  }

  /**
   * Releases a paused call: approved, the tool runs now, exactly once (`completed`/`failed`);
   * rejected, never (`rejected`). Under a governed runtime both go through its approval pipeline.
   */
  async decide(callId: string, decision: ApprovalDecision): Promise<ToolOutcome> {
    if (!decision || typeof decision.approver !== 'string' || decision.approver === '')
      throw new ToolEnvelopeError('invalid-option', 'an approver (non-empty string) is required');
    const entry = this.entries.get(callId);
    if (!entry?.paused) {
      if (entry?.decided) throw new ToolEnvelopeError('approval-not-pending', `the call ${callId} was already decided`);
      throw new ToolEnvelopeError('unknown-approval', `no paused call ${JSON.stringify(callId)}`);
    }
    const { call, paused } = entry;
    const by = { approver: decision.approver, ...(decision.reason !== undefined && { reason: decision.reason }) };
    let outcome: ToolOutcome;
    if (this.governed) {
      const approvalId = paused.metadata?.approvalId;
      if (typeof approvalId !== 'string') throw new ToolEnvelopeError('unknown-approval', `the paused call ${callId} has no approval id`);
      outcome = decision.approved ? await this.governed.approve(approvalId, by) : await this.governed.reject(approvalId, by);
    } else if (decision.approved) {
      const ran = await this.runtime.invoke(call.tool, call.args);
      outcome = { ...ran, status: isSuccessStatus(ran.status) ? 'completed' : 'failed', metadata: { ...ran.metadata, approvedBy: decision.approver } };
    } else {
      outcome = this.runtime.outcome(call.tool, {
        status: 'rejected',
        error: toolError('elevation', 'approval-rejected', `Rejected by ${decision.approver}${decision.reason ? `: ${decision.reason}` : '.'}`),
        metadata: { framework: this.framework, frameworkCallId: callId, decidedBy: decision.approver },
      });
    }
    this.entries.set(callId, { call, settled: outcome, decided: true });
    this.settle(call, outcome);
    return outcome;
  }

  /**
   * The framework's `execute`: the settled outcome when the gate or a decision already has one
   * (handed over once), else the tool runs now, through the gate. A call waiting for a decision
   * is not run: its paused outcome is returned.
   */
  async run(call: FrameworkCall, signal?: AbortSignal): Promise<ToolOutcome> {
    const entry = this.entries.get(call.callId);
    if (entry?.paused) return entry.paused;
    if (entry?.settled) {
      this.entries.delete(call.callId);
      return entry.settled;
    }
    if (!this.governed) {
      // Fail closed: a framework that executes without asking first still meets the gate.
      const gate = await this.gate(call);
      if (gate.kind === 'approval') return gate.outcome;
    }
    const outcome = this.governed
      ? await this.governed.invoke(call.tool, call.args, { ...this.governedOptions(call), ...(signal && { signal }) })
      : await this.runtime.invoke(call.tool, call.args, signal ? { signal } : undefined);
    // Paused by a governed runtime without the gate having been asked: still released by decide().
    if (outcome.status === 'paused') this.entries.set(call.callId, { call, paused: outcome });
    this.settle(call, outcome);
    return outcome;
  }

  private governedOptions(call: FrameworkCall): GovernedInvokeOptions {
    const given = this.options.callOptions?.(call) ?? {};
    const metadata: JsonObject = { ...given.metadata, framework: this.framework, frameworkCallId: call.callId };
    return { idempotencyKey: `${this.framework}:${call.callId}`, ...given, metadata };
  }

  private settle(call: FrameworkCall, outcome: ToolOutcome): void {
    this.outcomes.delete(call.callId);
    this.outcomes.set(call.callId, outcome);
    // Oldest first out: a Map iterates in insertion order.
    while (this.outcomes.size > this.remember) this.outcomes.delete(this.outcomes.keys().next().value!);
    while (this.entries.size > this.remember) this.entries.delete(this.entries.keys().next().value!);
    this.options.onOutcome?.(outcome, call);
  }
}

function reasonOf(outcome: ToolOutcome): string {
  return outcome.error?.detail ?? 'Waiting for an approver.';
}
