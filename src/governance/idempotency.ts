/**
 * Idempotency: a call with an idempotency key executes at most once per key, in one process
 * (an in-flight map) and across processes (a unique `pending` claim row in the shared store).
 * A repeat with the same tool and arguments gets the stored outcome back, marked as a replay;
 * the same key with different arguments is an `invalid-argument` failure, `idempotency-key-reused`.
 *
 * Every outcome of an executed call is stored, failures included: the side effect may have
 * happened before the failure, so a retry must use a new key.
 */
import { createHash, randomUUID } from 'node:crypto';
import { type JsonObject, type JsonValue, type ToolError, type ToolOutcome, failure, toolError } from 'tool-envelope/core';
import type { IdempotencyRecord, Store } from '../store/types.js';

/**
 * Stable JSON text of a value: object keys sorted (by UTF-16 code units), no whitespace; the same
 * data always gives the same text, whatever the key order it was built in.
 */
export function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  const keys = Object.keys(value).sort();
  const parts: string[] = [];
  for (const k of keys) {
    const v = value[k];
    if (v === undefined) continue;
    parts.push(`${JSON.stringify(k)}:${canonicalJson(v)}`);
  }
  return `{${parts.join(',')}}`;
}

/** The request fingerprint a key is bound to: SHA-256 of the tool name and the canonical arguments. */
export function requestFingerprint(tool: string, args: JsonObject): string {
  return `sha256:${createHash('sha256').update(tool).update('\u0000').update(canonicalJson(args)).digest('hex')}`;
}

export interface IdempotencyOptions {
  /** How long a repeat waits for another process's execution of the same key (default 30 000 ms). */
  waitTimeoutMs?: number;
  /** Poll interval while waiting (default 25 ms). */
  pollMs?: number;
}

/** What {@link IdempotencyGuard.run} gives back. */
export interface IdempotentResult {
  outcome: ToolOutcome;
  /** True when the outcome was not produced by this call but returned from a previous execution. */
  replay: boolean;
  /** The call that executed, when this is a replay. */
  originalToolCallId?: string;
  /** True when `execute` ran for this call. */
  executed: boolean;
}

/** The most characters an idempotency key may have. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 512;

/**
 * The error of a malformed idempotency key (not a string of 1-{@link MAX_IDEMPOTENCY_KEY_LENGTH}
 * characters), or `undefined` for a good one.
 */
export function idempotencyKeyError(key: unknown): ToolError | undefined {
  if (typeof key === 'string' && key.length > 0 && key.length <= MAX_IDEMPOTENCY_KEY_LENGTH) return undefined;
  return toolError('invalid-argument', 'invalid-idempotency-key', `An idempotency key must be a string of 1-${MAX_IDEMPOTENCY_KEY_LENGTH} characters.`);
}

/**
 * The key an idempotency key is stored under: scoped to the tenant and the originating principal
 * (the head of the verified chain) and the tool, so that one caller's key never answers another's
 * call. A fixed-length digest, whatever the key's length.
 */
export function scopedIdempotencyKey(scope: { tenant: string | null; principal: string | null; tool: string; key: string }): string {
  const h = createHash('sha256');
  for (const part of [scope.tenant ?? '', scope.principal ?? '', scope.tool, scope.key]) h.update(`${part.length}:${part}`);
  return `k1:${h.digest('base64url')}`;
}

/** Marks a stored outcome as a replay in its metadata (`replay: true`, `originalToolCallId`). */
export function markReplay(outcome: ToolOutcome, originalToolCallId: string): ToolOutcome {
  return { ...outcome, metadata: { ...outcome.metadata, replay: true, originalToolCallId } };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * At-most-once execution per idempotency key over a store.
 *
 * @example
 * ```ts
 * const guard = new IdempotencyGuard(store);
 * const { outcome, replay } = await guard.run({ key: 'order-42', tool: 'orders.create', args: { sku: 'A1' }, toolCallId: 'c1' }, () =>
 *   runtime.invoke('orders.create', { sku: 'A1' }),
 * );
 * ```
 */
export class IdempotencyGuard {
  private readonly inFlight = new Map<string, { fingerprint: string; toolCallId: string; done: Promise<ToolOutcome> }>();
  private readonly waitTimeoutMs: number;
  private readonly pollMs: number;

  constructor(
    private readonly store: Pick<Store, 'claimIdempotency' | 'completeIdempotency' | 'releaseIdempotency' | 'getIdempotency'>,
    options: IdempotencyOptions = {},
  ) {
    this.waitTimeoutMs = options.waitTimeoutMs ?? 30_000;
    this.pollMs = options.pollMs ?? 25;
  }

  /**
   * Runs `execute` unless the key was used before: then returns the stored outcome (a replay), or a
   * failure when the key was used with different arguments. `execute` must resolve to an outcome.
   */
  async run(request: { key: string; tool: string; args: JsonObject; toolCallId: string }, execute: () => Promise<ToolOutcome>): Promise<IdempotentResult> {
    const { key, tool, args } = request;
    const bad = idempotencyKeyError(key);
    if (bad) return this.failed(bad);
    let fingerprint: string;
    try {
      fingerprint = requestFingerprint(tool, args);
    } catch {
      return this.failed(toolError('invalid-argument', 'invalid-arguments', 'The arguments cannot be fingerprinted (not JSON).'));
    }

    // Same process: join the running execution instead of racing the store.
    const running = this.inFlight.get(key);
    if (running) {
      if (running.fingerprint !== fingerprint) return this.reused(key);
      const outcome = await running.done;
      return { outcome: markReplay(outcome, running.toolCallId), replay: true, originalToolCallId: running.toolCallId, executed: false };
    }
    return this.claimAndRun(request, fingerprint, execute);
  }

  /**
   * The first request of a key in this process: claimed in the store, executed at most once and its
   * outcome stored for replays; the same key's requests in this process meanwhile wait for it.
   */
  private async claimAndRun(
    request: { key: string; tool: string; toolCallId: string },
    fingerprint: string,
    execute: () => Promise<ToolOutcome>,
  ): Promise<IdempotentResult> {
    const { key, tool, toolCallId } = request;
    const claimToken = randomUUID();
    let resolveDone!: (o: ToolOutcome) => void;
    let rejectDone!: (e: unknown) => void;
    const done = new Promise<ToolOutcome>((res, rej) => {
      resolveDone = res;
      rejectDone = rej;
    });
    done.catch(() => {});
    const entry = { fingerprint, toolCallId, done };
    this.inFlight.set(key, entry);
    try {
      let claim: Awaited<ReturnType<Store['claimIdempotency']>>;
      try {
        claim = await this.store.claimIdempotency({ key, fingerprint, tool, toolCallId, claimToken, createdAt: Date.now() });
      } catch (e) {
        const o = failure(
          toolError(
            'internal',
            'idempotency-store-failure',
            `The idempotency store is unavailable, so the call was not run: ${(e as Error)?.message ?? String(e)}`,
            {
              retryable: true,
            },
          ),
        );
        resolveDone(o);
        return { outcome: o, replay: false, executed: false };
      }
      if (!claim.claimed) {
        const result = await this.fromExisting(key, fingerprint, claim.existing);
        resolveDone(result.outcome);
        return result;
      }
      let outcome: ToolOutcome;
      try {
        outcome = await execute();
      } catch (e) {
        // The call did not produce an outcome (a library error such as a closed session): it did not run, free the key.
        await this.store.releaseIdempotency(key, claimToken).catch(() => {});
        rejectDone(e);
        throw e;
      }
      outcome = await this.stored(key, claimToken, outcome);
      resolveDone(outcome);
      return { outcome, replay: false, executed: true };
    } finally {
      if (this.inFlight.get(key) === entry) this.inFlight.delete(key);
    }
  }

  /** The executed outcome, stored under the claimed key for replays; with a warning when it could not be. */
  private async stored(key: string, claimToken: string, outcome: ToolOutcome): Promise<ToolOutcome> {
    try {
      const stored = await this.store.completeIdempotency(key, claimToken, JSON.parse(JSON.stringify(outcome)) as JsonObject, Date.now());
      if (!stored) throw new Error('the claim was lost');
      return outcome;
    } catch (e) {
      return {
        ...outcome,
        warnings: [
          ...(outcome.warnings ?? []),
          { code: 'idempotency-not-recorded', detail: `The outcome could not be stored for replay: ${(e as Error)?.message ?? String(e)}` },
        ],
      };
    }
  }

  /** A repeat found an existing record: replay it, refuse a different request, or wait for the other execution. */
  private async fromExisting(key: string, fingerprint: string, existing: IdempotencyRecord): Promise<IdempotentResult> {
    const deadline = Date.now() + this.waitTimeoutMs;
    let rec: IdempotencyRecord | undefined = existing;
    for (;;) {
      if (!rec) {
        // The other claimant released the key without running; report it rather than run unsupervised.
        return this.failed(
          toolError('timeout', 'idempotency-key-released', 'Another call holding this idempotency key gave it up without running; retry.', { retryable: true }),
        );
      }
      if (rec.fingerprint !== fingerprint) return this.reused(key);
      if (rec.state === 'done' && rec.outcome) {
        const outcome = markReplay(rec.outcome as unknown as ToolOutcome, rec.toolCallId);
        return { outcome, replay: true, originalToolCallId: rec.toolCallId, executed: false };
      }
      if (Date.now() >= deadline) {
        return this.failed(
          toolError('timeout', 'idempotency-key-in-flight', `Another call with this idempotency key is still running after ${this.waitTimeoutMs} ms.`, {
            retryable: true,
          }),
        );
      }
      await sleep(this.pollMs);
      // A transient store error while waiting is not an answer; keep waiting until the deadline.
      rec = await this.store.getIdempotency(key).catch(() => rec);
    }
  }

  private reused(key: string): IdempotentResult {
    return this.failed(
      toolError(
        'invalid-argument',
        'idempotency-key-reused',
        `The idempotency key ${JSON.stringify(key.slice(0, 80))} was already used with different arguments.`,
      ),
    );
  }

  private failed(error: ReturnType<typeof toolError>): IdempotentResult {
    return { outcome: failure(error), replay: false, executed: false };
  }
}
