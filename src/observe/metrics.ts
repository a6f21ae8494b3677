/**
 * The gateway's Prometheus metrics (a prom-client registry of its own), by wrappers around the
 * governor, the store and the authenticator, the rest read when scraped. Names follow the OpenTelemetry
 * conventions where they exist, `tool_envelope_*` otherwise (docs/operators.md). Labels are bounded: at
 * most `maxTools` routed tool names, never argument values or principal ids.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { isSuccessStatus, type ToolOutcome } from 'tool-envelope/core';
import type { GatewayCall, GatewayGovernor } from '../mcp/call.js';
import type { Authenticator } from '../mcp/serve/auth.js';
import type { Upstream } from '../mcp/upstream/upstream.js';
import type { AuditRecord } from '../store/types.js';

/** The tool label of calls beyond `maxTools` distinct names. */
export const OTHER_TOOL = '_other';
/**
 * The tool label of calls to a name no upstream lists (refused before they run): one value
 * whatever the names, since they come from the client.
 */
export const UNKNOWN_TOOL = '_unknown';

/** The semantic conventions' advice for `mcp.server.operation.duration` (seconds). */
const DURATION_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];
/** How long a scrape waits for a read of the store before leaving its series out (`tool_envelope_store_up` 0). */
export const STORE_READ_MS = 250;
/** The upstream fault codes, each exported at 0 per upstream from the start. */
const UPSTREAM_FAULT_CODES = ['upstream-exited', 'upstream-hung', 'upstream-timeout', 'upstream-unavailable', 'upstream-protocol-error', 'upstream-rpc-error'];
/** The states an approval request leaves `pending` for, as counted. */
const DECISIONS = ['approved', 'rejected', 'expired', 'failed'];
/** The OAuth error codes of a refused credential. */
const AUTH_REASONS = ['invalid_request', 'invalid_token'];

/** A commit of the audit log takes from tens of microseconds to a slow disk's seconds. */
const COMMIT_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** What the scrape reads of a running gateway (its upstreams). */
export interface WatchedGateway {
  readonly upstreams: readonly Pick<Upstream, 'state' | 'generation' | 'exits' | 'spec'>[];
}

/** What the scrape reads of the governance (approvals waiting, the audit queue). */
export interface WatchedGovernance {
  /** Approval requests still pending. */
  pendingApprovals?: () => Promise<number>;
  /** Records queued or being written by the audit writer. */
  auditQueue?: () => number;
}

/** What the metrics read of an approval event (governance/approval-events.ts). */
export interface ObservedApprovalEvent {
  readonly event: string;
  readonly tool: string;
}

/** A gauge that is left out of the exposition while its source cannot be read (rather than a stale or made-up value). */
class ReadGauge extends Gauge {
  missing = false;

  override async get(): ReturnType<Gauge['get']> {
    const r = await super.get();
    return this.missing ? { ...r, values: [] } : r;
  }
}

export interface GatewayMetricsOptions {
  /** Most distinct tool label values; later names count as `_other` (default 1 000). */
  maxTools?: number;
}

/** The gateway's metrics and where they are fed from. */
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly maxTools: number;
  private readonly tools = new Set<string>();
  private readonly operation: Histogram<'mcp_method_name' | 'gen_ai_tool_name' | 'error_type'>;
  private readonly execute: Histogram<'gen_ai_operation_name' | 'gen_ai_tool_name' | 'error_type'>;
  private readonly calls: Counter<'gen_ai_tool_name' | 'status' | 'error_type'>;
  private readonly approvalsRequested: Counter<'gen_ai_tool_name'>;
  private readonly approvalsDecided: Counter<'decision'>;
  private readonly replays: Counter<'gen_ai_tool_name'>;
  private readonly denials: Counter<'rule'>;
  private readonly auditRecords: Counter;
  private readonly auditFailures: Counter;
  private readonly auditCommit: Histogram;
  private readonly authFailures: Counter<'reason'>;
  private readonly upstreamFaults: Counter<'upstream' | 'code'>;
  private gateway: WatchedGateway | undefined;
  private governance: WatchedGovernance = {};
  private sessions: (() => number) | undefined;
  /** Whether the last audit commit failed (readiness: the store is not writable). */
  auditFailing = false;

  constructor(options: GatewayMetricsOptions = {}) {
    this.maxTools = options.maxTools ?? 1_000;
    const registers = [this.registry];
    const counter = <L extends string>(name: string, help: string, labelNames: L[] = []) => new Counter<L>({ name, help, labelNames, registers });
    const histogram = <L extends string>(name: string, help: string, buckets: number[], labelNames: L[] = []) =>
      new Histogram<L>({ name, help, labelNames, buckets, registers });
    this.operation = histogram(
      'mcp_server_operation_duration_seconds',
      'MCP requests the gateway served (tools/call), by tool and error type (OpenTelemetry mcp.server.operation.duration).',
      DURATION_BUCKETS,
      ['mcp_method_name', 'gen_ai_tool_name', 'error_type'],
    );
    this.execute = histogram(
      'gen_ai_execute_tool_duration_seconds',
      'Tool executions through the gateway, governance included (OpenTelemetry gen_ai.execute_tool.duration).',
      DURATION_BUCKETS,
      ['gen_ai_operation_name', 'gen_ai_tool_name', 'error_type'],
    );
    this.calls = counter('tool_envelope_tool_calls_total', 'Tool calls by outcome status and error category (error_type).', [
      'gen_ai_tool_name',
      'status',
      'error_type',
    ]);
    this.approvalsRequested = counter('tool_envelope_approvals_requested_total', 'Calls paused for an approver.', ['gen_ai_tool_name']);
    this.approvalsDecided = counter(
      'tool_envelope_approvals_decided_total',
      'Approval requests decided, counted once across the gateways on a store by the one that runs or tells it, by the state they went to.',
      ['decision'],
    );
    // Known label sets start at 0, so that rate() and increase() see their first increment.
    for (const decision of DECISIONS) this.approvalsDecided.inc({ decision }, 0);
    this.replays = counter(
      'tool_envelope_idempotent_replays_total',
      'Calls answered with the stored outcome of an earlier call with the same idempotency key.',
      ['gen_ai_tool_name'],
    );
    this.denials = counter('tool_envelope_policy_denials_total', 'Calls denied by policy, by the rule that decided.', ['rule']);
    this.auditRecords = counter('tool_envelope_audit_records_total', 'Audit records committed.');
    this.auditFailures = counter('tool_envelope_audit_commit_failures_total', 'Audit commits that failed.');
    this.auditCommit = histogram('tool_envelope_audit_commit_duration_seconds', 'Time to commit one batch of audit records.', COMMIT_BUCKETS);
    this.authFailures = counter('tool_envelope_auth_failures_total', 'HTTP requests refused for their credentials, by OAuth error code.', ['reason']);
    this.upstreamFaults = counter(
      'tool_envelope_upstream_faults_total',
      'Calls that failed at the upstream (exited, hung, timed out, unavailable, protocol or RPC error), by code.',
      ['upstream', 'code'],
    );
    this.scraped();
  }

  /** The metrics read when scraped. */
  private scraped(): void {
    const registers = [this.registry];
    const self = this;
    const starts = new Map<string, number>();
    const exits = new Map<string, number>();
    // Counters fed from the upstreams' own counts: each scrape adds what grew since the last.
    // A counter is exported at 0 from an upstream's first scrape, so that rate() and increase() see its first increment.
    const grow = (counter: Counter<'upstream'>, seen: Map<string, number>, name: string, now: number): void => {
      const delta = now - (seen.get(name) ?? 0);
      if (delta > 0 || !seen.has(name)) counter.inc({ upstream: name }, Math.max(delta, 0));
      seen.set(name, now);
    };
    const upstreamStarts: Counter<'upstream'> = new Counter({
      name: 'tool_envelope_upstream_starts_total',
      help: 'Successful (re)starts of each upstream.',
      labelNames: ['upstream'],
      registers,
      collect() {
        for (const u of self.gateway?.upstreams ?? []) grow(upstreamStarts, starts, u.spec.name, u.generation);
      },
    });
    const upstreamExits: Counter<'upstream'> = new Counter({
      name: 'tool_envelope_upstream_exits_total',
      help: 'Connections to an upstream that ended without the gateway closing them (exit, crash, hang).',
      labelNames: ['upstream'],
      registers,
      collect() {
        for (const u of self.gateway?.upstreams ?? []) grow(upstreamExits, exits, u.spec.name, u.exits);
      },
    });
    new Gauge({
      name: 'tool_envelope_upstream_up',
      help: '1 when the upstream is connected and ready, else 0.',
      labelNames: ['upstream'],
      registers,
      collect() {
        for (const u of self.gateway?.upstreams ?? []) this.set({ upstream: u.spec.name }, u.state === 'ready' ? 1 : 0);
      },
    });
    new Gauge({
      name: 'tool_envelope_sessions_open',
      help: 'Open MCP sessions (Streamable HTTP, 2025 era).',
      registers,
      collect() {
        if (self.sessions) this.set(self.sessions());
      },
    });
    // One bounded read of the store per scrape, shared by the gauges it feeds: a store that fails or
    // hangs leaves them out (and store_up 0) instead of failing the whole scrape.
    let scrape: Promise<number | undefined> | undefined;
    let reading: Promise<number | undefined> | undefined;
    const pendingNow = (): Promise<number | undefined> => {
      const read = self.governance.pendingApprovals;
      if (!read) return Promise.resolve(undefined);
      if (!scrape) {
        // A read still running from an earlier scrape is waited for, not doubled.
        reading ??= read()
          .then(
            (n) => n,
            () => undefined,
          )
          .finally(() => (reading = undefined));
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), STORE_READ_MS)));
        scrape = Promise.race([reading, late]).finally(() => {
          clearTimeout(timer);
          scrape = undefined;
        });
      }
      return scrape;
    };
    new ReadGauge({
      name: 'tool_envelope_approvals_waiting',
      help: 'Approval requests pending a decision in the whole store (every gateway on the store reports the same count).',
      registers,
      async collect() {
        const n = await pendingNow();
        (this as ReadGauge).missing = n === undefined;
        if (n !== undefined) this.set(n);
      },
    });
    new ReadGauge({
      name: 'tool_envelope_store_up',
      help: `1 when the store answered this scrape's read within ${STORE_READ_MS} ms, else 0.`,
      registers,
      async collect() {
        (this as ReadGauge).missing = !self.governance.pendingApprovals;
        this.set((await pendingNow()) === undefined ? 0 : 1);
      },
    });
    new Gauge({
      name: 'tool_envelope_audit_queue_depth',
      help: 'Audit records queued or being written.',
      registers,
      collect() {
        if (self.governance.auditQueue) this.set(self.governance.auditQueue());
      },
    });
  }

  /** Reads the gateway's upstreams, the governance's queues and the open sessions when scraped. */
  watch(gateway: WatchedGateway, governance: WatchedGovernance = {}, sessions?: () => number): void {
    for (const u of gateway.upstreams) for (const code of UPSTREAM_FAULT_CODES) this.upstreamFaults.inc({ upstream: u.spec.name, code }, 0);
    this.gateway = gateway;
    this.governance = governance;
    this.sessions = sessions;
  }

  /** Adds session counting after the listener exists. */
  watchSessions(sessions: () => number): void {
    this.sessions = sessions;
  }

  private toolLabel(tool: string): string {
    if (this.tools.has(tool)) return tool;
    if (this.tools.size >= this.maxTools) return OTHER_TOOL;
    this.tools.add(tool);
    return tool;
  }

  /** Counts one finished call. */
  observeCall(call: GatewayCall, outcome: ToolOutcome, seconds: number): void {
    this.observeOutcome(call.tool, call.upstream, outcome, seconds);
  }

  /** Counts one outcome of `tool` (`upstream`: where its upstream faults count, when known). */
  private observeOutcome(toolName: string, upstream: string | undefined, outcome: ToolOutcome, seconds: number): void {
    const tool = this.toolLabel(toolName);
    const status = outcome.status;
    const failed = !isSuccessStatus(status) && status !== 'paused';
    // A failure always names its category (as the spans do); `internal` when the outcome has none.
    const errorType = failed ? (outcome.error?.category ?? 'internal') : '';
    if (failed) {
      this.operation.observe({ mcp_method_name: 'tools/call', gen_ai_tool_name: tool, error_type: errorType }, seconds);
      this.execute.observe({ gen_ai_operation_name: 'execute_tool', gen_ai_tool_name: tool, error_type: errorType }, seconds);
      const code = outcome.error?.code;
      if (code?.startsWith('upstream-') && upstream !== undefined) this.upstreamFaults.inc({ upstream, code });
    } else {
      this.operation.observe({ mcp_method_name: 'tools/call', gen_ai_tool_name: tool }, seconds);
      this.execute.observe({ gen_ai_operation_name: 'execute_tool', gen_ai_tool_name: tool }, seconds);
    }
    this.calls.inc(failed ? { gen_ai_tool_name: tool, status, error_type: errorType } : { gen_ai_tool_name: tool, status });
    if (status === 'paused') this.approvalsRequested.inc({ gen_ai_tool_name: tool });
  }

  /**
   * A governor that counts every call with its governed outcome, around `inner` (which may be
   * another wrapper, e.g. `traceGateway()`).
   */
  governor(inner?: GatewayGovernor): GatewayGovernor {
    return {
      run: async (call, execute) => {
        const t0 = performance.now();
        const outcome = inner ? await inner.run(call, execute) : await execute();
        this.observeCall(call, outcome, (performance.now() - t0) / 1000);
        return outcome;
      },
      unknownTool: () => {
        this.observeUnknownTool();
        inner?.unknownTool?.();
      },
    };
  }

  /**
   * Counts a call refused for a tool name no upstream lists: an error with the caller's argument
   * at fault (the JSON-RPC invalid-params refusal), in the calls counter only (it ran no time worth
   * a histogram), under {@link UNKNOWN_TOOL}.
   */
  observeUnknownTool(): void {
    this.calls.inc({ gen_ai_tool_name: UNKNOWN_TOOL, status: 'error', error_type: 'invalid-argument' });
  }

  /**
   * Counts an approval event of this gateway's governance. Each is told by one process across the
   * gateways on a store (the run's claimant, the rejection's teller: governance/approval-notices.ts),
   * so a decision made anywhere (the CLI, the console, another replica) is counted once, by the
   * gateway that runs or tells it: `approved` as a decision; `rejected` and `expired` as decisions
   * and as the paused call's final outcome (`status="rejected"`, nothing ran, so no duration).
   */
  observeApprovalEvent(e: ObservedApprovalEvent): void {
    if (e.event === 'approved') this.approvalsDecided.inc({ decision: 'approved' });
    else if (e.event === 'rejected' || e.event === 'expired') {
      this.approvalsDecided.inc({ decision: e.event });
      this.calls.inc({ gen_ai_tool_name: this.toolLabel(e.tool), status: 'rejected', error_type: 'elevation' });
    }
  }

  /** Counts a record the audit log is handed (replays, policy denials); its commit is counted by {@link observeStore}. */
  private sawRecord(record: AuditRecord): void {
    if (record.replay === true) this.replays.inc({ gen_ai_tool_name: this.toolLabel(record.tool) });
    const decision = record.policyDecision;
    if (decision?.effect === 'deny') this.denials.inc({ rule: typeof decision.rule === 'string' ? decision.rule.slice(0, 100) : '' });
  }

  /**
   * The store, with its audit commits timed and counted and approval decisions counted. Every other
   * method is the store's own, bound to it.
   */
  observeStore<S extends object>(store: S): S {
    const commit = async <T>(n: number, run: () => Promise<T>): Promise<T> => {
      const end = this.auditCommit.startTimer();
      try {
        const r = await run();
        end();
        this.auditRecords.inc(n);
        this.auditFailing = false;
        return r;
      } catch (e) {
        this.auditFailures.inc();
        this.auditFailing = true;
        throw e;
      }
    };
    const wrapped: Record<string, (target: Record<string, (...a: unknown[]) => unknown>) => (...a: unknown[]) => unknown> = {
      appendAudit: (t) => (records) => {
        for (const r of records as AuditRecord[]) if (r.status !== 'started') this.sawRecord(r);
        return commit((records as AuditRecord[]).length, () => t.appendAudit!(records) as Promise<void>);
      },
      prepareAudit: (t) => (record) => {
        if ((record as AuditRecord).status !== 'started') this.sawRecord(record as AuditRecord);
        return t.prepareAudit!(record);
      },
      appendPreparedAudit: (t) => (rows, options) => commit((rows as unknown[]).length, () => t.appendPreparedAudit!(rows, options) as Promise<void>),
      transitionApproval:
        (t) =>
        async (id, from, to, options, ...rest) => {
          const r = (await t.transitionApproval!(id, from, to, options, ...rest)) as { tool?: unknown } | undefined;
          // Approved, rejected and expired are counted from the approval events (observeApprovalEvent), once across gateways.
          if (r !== undefined && from === 'pending' && to === 'failed') this.approvalsDecided.inc({ decision: 'failed' });
          // The conditional transition to a final state is made by one process: the run's claimant (or the
          // refusal of an approval whose signatures fail), which counts the paused call's final outcome.
          const outcome = (options as { outcome?: ToolOutcome } | undefined)?.outcome;
          if (r !== undefined && (to === 'completed' || to === 'failed') && typeof r.tool === 'string' && outcome && typeof outcome.status === 'string') {
            this.observeOutcome(r.tool, undefined, outcome, typeof outcome.latencyMs === 'number' ? outcome.latencyMs / 1000 : 0);
          }
          return r;
        },
    };
    return new Proxy(store, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver);
        if (typeof value !== 'function') return value;
        const wrap = typeof key === 'string' ? wrapped[key] : undefined;
        return wrap ? wrap(target as never) : value.bind(target);
      },
    });
  }

  /** The authenticator, with its refusals counted by OAuth error code. */
  observeAuthenticator(auth: Authenticator): Authenticator {
    const failures = this.authFailures;
    for (const reason of AUTH_REASONS) failures.inc({ reason }, 0);
    return new Proxy(auth, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver);
        if (key !== 'authenticate' || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value;
        return async (header: string | undefined) => {
          const who = await value.call(target, header);
          if (who && typeof who === 'object' && 'error' in who && typeof who.error === 'string') failures.inc({ reason: who.error });
          return who;
        };
      },
    });
  }

  /** The exposition text. */
  exposition(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
