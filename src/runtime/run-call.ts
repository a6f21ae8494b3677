/**
 * The steps of one call, in order: check the arguments, run the handler, check and
 * settle its result. The deadline and the caller's signal may settle the call at any
 * await; each step after an await looks at `state.done` first and stops when it is.
 *
 * Plain async/await: what runs before the handler's value is there is synchronous (a
 * synchronous input check runs the handler in the same turn, as a bare call would), and
 * the handler's value, whatever it is, is awaited exactly once (`awaitValue`). Nothing
 * here rejects: whatever the tool does becomes the outcome.
 */
import type { JsonValue, ContentBlock } from 'tool-envelope/core';
import { extractBinaries, violationsError } from './call-result.js';
import type { CallState } from './call-state.js';
import type { ToolBinary } from './context.js';
import type { CheckResult } from './schema.js';

/** Runs the call `state` describes to its outcome (delivered through `state.resolve`). */
export function runCall(state: CallState, input: unknown): void {
  try {
    const args = state.admit(input);
    if (args === undefined) return;
    const inputCheck = state.def.checkInput;
    if (inputCheck === undefined) {
      runHandler(state, args);
      return;
    }
    const checked = inputCheck(args);
    if (checked instanceof Promise) void awaitInputCheck(state, checked);
    else afterInputCheck(state, checked);
  } catch (e) {
    // A throwing input check, or a fault of the runtime itself: it still becomes an outcome, never a rejection.
    state.onError(e);
  }
}

async function awaitInputCheck(state: CallState, checked: Promise<CheckResult>): Promise<void> {
  let r: CheckResult;
  try {
    r = await checked;
  } catch (e) {
    state.onError(e);
    return;
  }
  if (state.done) return;
  try {
    afterInputCheck(state, r);
  } catch (e) {
    state.onError(e);
  }
}

function afterInputCheck(state: CallState, r: CheckResult): void {
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
  void awaitValue(state, ret);
}

/** The one await of a call: the handler's value (a promise, a thenable or a plain value). */
async function awaitValue(state: CallState, ret: unknown): Promise<void> {
  let value: unknown;
  try {
    // `await` of a thenable whose `then` getter or method throws lands in the catch, like a rejection.
    value = await ret;
  } catch (e) {
    state.onError(e);
    return;
  }
  if (state.done) return;
  try {
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
