/**
 * The steps of one call as a chain of callbacks: the product path of `invokeTool`.
 * It pays for the `runtime.invoke added cost per call, no schema, no store` row of
 * bench/runtime.bench.mjs: measured A/B against the async/await `runCall`
 * (run-call.ts), that version adds about 170 ns per call (+25%), over the 10% the
 * runtime's bench ratios may move. `runCall` is its plain reference: the same steps,
 * and every invoke, matrix and concurrency test runs under both
 * (src/runtime/references-steps.test.ts, src/runtime/references.test.ts).
 */
import type { JsonValue, ContentBlock } from 'tool-envelope/core';
import { extractBinaries, violationsError } from './call-result.js';
import type { CallState } from './call-state.js';
import type { ToolBinary } from './context.js';
import type { CheckResult } from './schema.js';

/**
 * Runs the call `state` describes to its outcome (delivered through `state.resolve`)
 * without an async function or an await: each step calls the next, directly when a
 * step is synchronous, from a `then` callback when it is not.
 *
 * @example
 * ```ts
 * const outcome = await new Promise<ToolOutcome>((resolve) => { state.resolve = resolve; driveCall(state, args); });
 * ```
 */
export function driveCall(state: CallState, input: unknown): void {
  try {
    const args = state.admit(input);
    if (args === undefined) return;
    const check = state.def.checkInput;
    if (check === undefined) {
      runHandler(state, args);
      return;
    }
    let checked: CheckResult | Promise<CheckResult>;
    try {
      checked = check(args);
    } catch (e) {
      state.onError(e);
      return;
    }
    if (checked instanceof Promise)
      checked.then(
        (r) => afterInputCheck(state, r),
        (e: unknown) => state.onError(e),
      );
    else afterInputCheck(state, checked);
  } catch (e) {
    // Only a fault of the runtime itself lands here; it still becomes an outcome, never a rejection.
    state.onError(e);
  }
}

function afterInputCheck(state: CallState, r: CheckResult): void {
  if (state.done) return;
  if (r.violations !== undefined) state.settleError(violationsError('invalid-argument', 'invalid-arguments', 'Invalid arguments', r.violations));
  else runHandler(state, r.value);
}

function runHandler(state: CallState, args: unknown): void {
  let ret: unknown;
  try {
    ret = state.def.handler(args, state);
  } catch (e) {
    state.onError(e);
    return;
  }
  try {
    if (isThenable(ret)) {
      ret.then(
        (v) => onValue(state, v),
        (e: unknown) => state.onError(e),
      );
      return;
    }
  } catch (e) {
    // A hostile thenable: its `then` getter or method threw.
    state.onError(e);
    return;
  }
  onValue(state, ret);
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';
}

function onValue(state: CallState, v: unknown): void {
  if (state.done) return;
  try {
    let value = v;
    let content: ContentBlock[] | undefined;
    let firstBinary: ToolBinary | undefined;
    if (state.binaries !== 0 || value instanceof Uint8Array || value instanceof ArrayBuffer) {
      ({ value, content, firstBinary } = extractBinaries(value, state.toolCallId));
    }
    const check = state.def.checkOutput;
    if (check === undefined) {
      state.settleOk(state.jsonResult(value), content, firstBinary);
      return;
    }
    // A Standard Schema checks the value the handler returned; a JSON Schema checks its JSON form.
    const json = state.def.checkOutputOnJson;
    const subject = json ? state.jsonResult(value) : value;
    const checked = check(subject);
    const after = (r: CheckResult): void => {
      if (state.done) return;
      try {
        if (r.violations !== undefined) {
          state.settleError(violationsError('internal', 'output-schema-violation', 'The result does not match the output schema', r.violations));
        } else state.settleOk(json ? (subject as JsonValue) : state.jsonResult(r.value), content, firstBinary);
      } catch (e) {
        state.settleError(state.resultError(e));
      }
    };
    if (checked instanceof Promise) checked.then(after, (e: unknown) => state.onError(e));
    else after(checked);
  } catch (e) {
    state.settleError(state.resultError(e));
  }
}
