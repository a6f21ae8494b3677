/**
 * Multi-round-trip input (spec basic/patterns/mrtr) for 2026-07-28 calls: an upstream's elicitation,
 * sampling or roots request becomes an `input_required` answer, and the client's retry answers it while
 * the one governed call waits in this process. The handle (`tei_` + 256 random bits) is bound to the
 * caller and the tool, rotated every round, and lives in this process's memory until the deadline.
 */
import { randomBytes } from 'node:crypto';
import {
  ProtocolErrorCode,
  inputRequired,
  type InputRequiredResult,
  type InputRequests,
  type Request,
  type Result,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { Identity } from '../../governance/identity.js';
import { rpcError } from '../wire/rpc-errors.js';

/** At most this many input rounds per call; past it the upstream's request is refused. */
export const MAX_INPUT_ROUNDS = 16;

const STATE_SHAPE = /^tei_[A-Za-z0-9_-]{43}$/;

/** The one answer to a state that is not this caller's, forged, expired, or from another process. */
function unknownState(): Error {
  return rpcError(
    ProtocolErrorCode.InvalidParams,
    'Unknown or expired requestState: input rounds are answered only by the caller that started the call, within its deadline, on the same gateway process',
  );
}

/** Who may answer a call's input rounds: its verified tenant and principal. */
export function callerKeyOf(identity: Pick<Identity, 'principal'>): string {
  const p = identity.principal;
  return JSON.stringify([p.tenant_id ?? null, p.kind, p.id]);
}

/**
 * How a modern-era call asks its client (rounds/input.ts): the capabilities its request declared, and
 * the input round that carries the upstream's request.
 */
export interface ModernInput {
  capabilities: Record<string, unknown> | undefined;
  ask(req: Request, signal: AbortSignal): Promise<Result>;
  /**
   * The upstream asked for what the request did not declare (it got "Method not found"): when the
   * call then fails, the client's request is answered with `error` (-32021) instead of the failure.
   */
  lacks(error: Error): void;
}

interface Ask {
  key: string;
  request: Request;
  resolve(r: Result): void;
  reject(e: Error): void;
}

type Step = { kind: 'done'; result: Result } | { kind: 'input' };

/** The input channel of one modern-era call: what its upstream asks, and the call's own end. */
export class InputCall {
  readonly caller: string;
  readonly tool: string;
  readonly expiresAt: number;
  private readonly asks = new Map<string, Ask>();
  private counter = 0;
  rounds = 0;
  private wake: (() => void) | undefined;
  private ended = false;
  private finalResult: { result: Result } | { error: unknown } | undefined;
  /** What the client request waiting on this call is answered with if the call fails (a capability it lacked). */
  private lacking: Error | undefined;
  /** The round the call is answered with instead of its result (a confirmation, rounds/confirm.ts). */
  private deferred: InputRequiredResult | undefined;
  private readonly controller = new AbortController();
  /**
   * The signal the upstream call runs under: not the first request's (it ends when that request is
   * answered with `input_required`), but aborted when the client cancels the request it is waiting
   * on, and at expiry.
   */
  readonly signal: AbortSignal = this.controller.signal;

  constructor(caller: string, tool: string, deadlineMs: number) {
    this.caller = caller;
    this.tool = tool;
    this.expiresAt = Date.now() + deadlineMs;
  }

  /** The upstream asks the caller (through the relay): pending until the caller's retry answers. */
  ask(request: Request, signal: AbortSignal): Promise<Result> {
    if (this.ended) return Promise.reject(rpcError(ProtocolErrorCode.InvalidRequest, `${request.method}: the call it belongs to has ended`));
    if (this.rounds >= MAX_INPUT_ROUNDS)
      return Promise.reject(rpcError(ProtocolErrorCode.InvalidRequest, `${request.method}: the call already had ${MAX_INPUT_ROUNDS} input rounds`));
    const key = `input-${++this.counter}`;
    return new Promise<Result>((resolve, reject) => {
      const onAbort = (): void => {
        this.asks.delete(key);
        reject(rpcError(ProtocolErrorCode.InvalidRequest, `${request.method}: cancelled`));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const done = (): void => signal.removeEventListener('abort', onAbort);
      this.asks.set(key, {
        key,
        request,
        resolve: (r) => {
          done();
          resolve(r);
        },
        reject: (e) => {
          done();
          reject(e);
        },
      });
      this.wake?.();
    });
  }

  /**
   * Answers the client with this round instead of the call's result: a round whose state travels
   * with the client (a confirmation), so nothing stays pending here.
   */
  defer(round: InputRequiredResult): void {
    this.deferred = round;
  }

  /**
   * The upstream asked for input the caller's request did not declare a capability for, and was
   * told "Method not found": if the call then fails, it needed it, and the client request waiting on
   * the call gets `error` instead of the failure; a call that goes on without it answers as usual.
   */
  lacks(error: Error): void {
    this.lacking ??= error;
  }

  /** Settles the call: the governed run is over (its result or its error). */
  finish(outcome: { result: Result } | { error: unknown }): void {
    this.finalResult = outcome;
    this.end('the call has ended');
    this.wake?.();
  }

  /** Fails every pending request of the upstream (expiry, end of the call) and refuses new ones. */
  end(reason: string): void {
    this.ended = true;
    if (!this.finalResult) this.controller.abort(new Error(reason));
    for (const a of this.asks.values()) a.reject(rpcError(ProtocolErrorCode.InvalidRequest, `${a.request.method}: ${reason}`));
    this.asks.clear();
  }

  /** Hands the caller's responses to the upstream's pending requests (unknown keys are ignored). */
  answer(responses: Record<string, unknown> | undefined): void {
    for (const [key, value] of Object.entries(responses ?? {})) {
      const a = this.asks.get(key);
      if (!a || typeof value !== 'object' || value === null) continue;
      this.asks.delete(key);
      a.resolve(value as Result);
    }
  }

  /** Waits until the call ends, or the upstream asks for input that is not answered yet. */
  async next(): Promise<Step> {
    for (;;) {
      if (this.finalResult) {
        if (this.lacking && !this.deferred && ('error' in this.finalResult || (this.finalResult.result as { isError?: unknown }).isError === true))
          throw this.lacking;
        if ('error' in this.finalResult) throw this.finalResult.error;
        return { kind: 'done', result: this.deferred ?? this.finalResult.result };
      }
      if (this.asks.size > 0) {
        // Requests the upstream sends together travel in one round.
        await new Promise((r) => setImmediate(r));
        if (this.finalResult) continue;
        return { kind: 'input' };
      }
      await new Promise<void>((r) => {
        this.wake = r;
      });
      this.wake = undefined;
    }
  }

  /** The pending requests, as the `inputRequests` of an `input_required` result. */
  inputRequests(): InputRequests {
    const out: Record<string, unknown> = {};
    for (const a of this.asks.values())
      out[a.key] = a.request.params === undefined ? { method: a.request.method } : { method: a.request.method, params: a.request.params };
    return out as InputRequests;
  }
}

/** The pending modern-era calls of this gateway process, by their current `requestState`. */
export class InputRounds {
  private readonly byState = new Map<string, InputCall>();
  /** The input channel of each modern-era `tools/call` being served, by its handler's context. */
  private readonly byContext = new WeakMap<ServerContext, InputCall>();

  /** A modern-era `tools/call` starts: its input channel, set before the run so its upstream request can find it. */
  begin(ctx: ServerContext, caller: string, tool: string, deadlineMs: number): InputCall {
    const call = new InputCall(caller, tool, deadlineMs);
    this.byContext.set(ctx, call);
    return call;
  }

  /** How an upstream's request reaches the client of the modern-era call `ctx` serves (undefined: not one). */
  inputFor(ctx: ServerContext): ModernInput | undefined {
    const call = this.byContext.get(ctx);
    return call && { ask: (r, sig) => call.ask(r, sig), lacks: (e) => call.lacks(e), capabilities: modernClientCapabilities(ctx) };
  }

  /** The signal of the upstream request of the modern-era call `ctx` serves: it outlives the client request that started it. */
  signalFor(ctx: ServerContext): AbortSignal | undefined {
    return this.byContext.get(ctx)?.signal;
  }

  /** A retry with the client's input: the call it continues is already running (never run twice). */
  resume(ctx: ServerContext, caller: string, tool: string): Promise<Result | InputRequiredResult> {
    const call = this.take(ctx.mcpReq.requestState(), caller, tool);
    call.answer(ctx.mcpReq.inputResponses);
    return this.step(call, ctx.mcpReq.signal);
  }

  /** Serves a modern-era call's run: its result, or its first input round. */
  serve(call: InputCall, run: Promise<Result>, signal: AbortSignal): Promise<Result | InputRequiredResult> {
    void run.then(
      (result) => call.finish({ result }),
      (error: unknown) => call.finish({ error }),
    );
    return this.step(call, signal);
  }

  /** Starts tracking a call whose upstream asked for input. */
  open(call: InputCall): string {
    const state = `tei_${randomBytes(32).toString('base64url')}`;
    this.byState.set(state, call);
    const left = Math.max(0, call.expiresAt - Date.now());
    const timer = setTimeout(() => {
      if (this.byState.get(state) === call) {
        this.byState.delete(state);
        call.end('the call reached its deadline before the client answered');
      }
    }, left);
    timer.unref();
    return state;
  }

  /**
   * The call a retried request continues: only for the caller that started it, with the same tool,
   * before its deadline. The state is used up (every round gets a new one).
   */
  take(state: unknown, caller: string, tool: string): InputCall {
    if (typeof state !== 'string' || !STATE_SHAPE.test(state)) throw unknownState();
    const call = this.byState.get(state);
    if (!call || call.caller !== caller || call.tool !== tool || Date.now() > call.expiresAt) throw unknownState();
    this.byState.delete(state);
    return call;
  }

  /** Answers the client's request with the call's next step: its result, or another round. */
  async step(call: InputCall, signal: AbortSignal): Promise<Result | InputRequiredResult> {
    // While a client request waits on the call, its cancellation cancels the call.
    const cancel = (): void => call.end('the client cancelled the call');
    if (signal.aborted) cancel();
    signal.addEventListener('abort', cancel, { once: true });
    try {
      const step = await call.next();
      if (step.kind === 'done') return step.result;
      call.rounds++;
      return inputRequired({ inputRequests: call.inputRequests(), requestState: this.open(call) });
    } finally {
      signal.removeEventListener('abort', cancel);
    }
  }

  /** Fails every pending call (the gateway closes). */
  close(): void {
    for (const call of this.byState.values()) call.end('the gateway is closing');
    this.byState.clear();
  }
}

/** The client capabilities a modern-era request declares in its `_meta` envelope. */
export function modernClientCapabilities(ctx: ServerContext): Record<string, unknown> | undefined {
  const caps = (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.['io.modelcontextprotocol/clientCapabilities'];
  return typeof caps === 'object' && caps !== null ? (caps as Record<string, unknown>) : undefined;
}
