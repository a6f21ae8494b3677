/**
 * The steps of one call, in order: check the arguments, run the handler, check and
 * settle its result. The deadline and the caller's signal may settle the call at any
 * await; each step after an await looks at `state.done` first and stops when it is.
 */
import type { JsonValue, ContentBlock } from 'tool-envelope/core';
import { extractBinaries, violationsError } from './call-result.js';
import type { CallState } from './call-state.js';
import type { ToolBinary } from './context.js';
import type { CheckResult } from './schema.js';

/**
 * Runs the call `state` describes to its outcome (delivered through `state.resolve`);
 * never rejects: whatever the tool does becomes the outcome.
 *
 * @example
 * ```ts
 * const outcome = await new Promise<ToolOutcome>((resolve) => { state.resolve = resolve; void runCall(state, args); });
 * ```
 */
export async function runCall(state: CallState, input: unknown): Promise<void> {
  try {
    let value: unknown;
    try {
      let args: unknown = state.admit(input);
      if (args === undefined) return;
      const inputCheck = state.def.checkInput;
      if (inputCheck !== undefined) {
        const checked = inputCheck(args);
        // A synchronous check (Ajv, most Standard Schemas) runs the handler in the same turn, as a bare call would.
        const r = checked instanceof Promise ? await checked : checked;
        if (state.done) return;
        if (r.violations !== undefined) {
          state.settleError(violationsError('invalid-argument', 'invalid-arguments', 'Invalid arguments', r.violations));
          return;
        }
        args = r.value;
      }
      // `await` of a thenable whose `then` getter or method throws lands in the catch, like a rejection.
      value = await state.def.handler(args, state);
    } catch (e) {
      state.onError(e);
      return;
    }
    if (state.done) return;
    const checking = settleValue(state, value);
    if (checking !== undefined) await checking;
  } catch (e) {
    // Only a fault of the runtime itself lands here; it still becomes an outcome, never a rejection.
    state.onError(e);
  }
}

/**
 * Settles the call with the handler's value, checked against the output schema if
 * there is one. Returns a promise only while an asynchronous output check runs.
 */
function settleValue(state: CallState, v: unknown): Promise<void> | undefined {
  try {
    let value = v;
    let content: ContentBlock[] | undefined;
    let firstBinary: ToolBinary | undefined;
    if (state.binaries !== 0 || value instanceof Uint8Array || value instanceof ArrayBuffer) {
      ({ value, content, firstBinary } = extractBinaries(value, state.toolCallId));
    }
    const outputCheck = state.def.checkOutput;
    if (outputCheck === undefined) {
      state.settleOk(state.jsonResult(value), content, firstBinary);
      return undefined;
    }
    // A Standard Schema checks the value the handler returned; a JSON Schema checks its JSON form.
    const json = state.def.checkOutputOnJson;
    const subject = json ? state.jsonResult(value) : value;
    const checked = outputCheck(subject);
    const settle = (r: CheckResult): void => {
      if (r.violations !== undefined) {
        state.settleError(violationsError('internal', 'output-schema-violation', 'The result does not match the output schema', r.violations));
      } else state.settleOk(json ? (subject as JsonValue) : state.jsonResult(r.value), content, firstBinary);
    };
    if (!(checked instanceof Promise)) {
      settle(checked);
      return undefined;
    }
    return settleChecked(state, checked, settle);
  } catch (e) {
    state.settleError(state.resultError(e));
    return undefined;
  }
}

async function settleChecked(state: CallState, checked: Promise<CheckResult>, settle: (r: CheckResult) => void): Promise<void> {
  let r: CheckResult;
  try {
    r = await checked;
  } catch (e) {
    state.onError(e);
    return;
  }
  if (state.done) return;
  try {
    settle(r);
  } catch (e) {
    state.settleError(state.resultError(e));
  }
}
