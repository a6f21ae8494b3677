// The @example of each public entry point of tool-envelope (and tool-envelope/core): each region is
// copied into the JSDoc of the symbol it names by scripts/sync-jsdoc-examples.mjs and type-checked here.
import {
  classifyThrown,
  convert,
  createPreview,
  decodeMcec,
  encodeContextosResult,
  encodeDw,
  encodeMcec,
  failure,
  type Loss,
  success,
  toJsonSafe,
  toolError,
  ToolFailure,
  validateEnvelope,
} from 'tool-envelope/core';

export function example_success() {
  //#region success
  const outcome = success({ rows: 3 }, { warnings: [{ code: 'partial-page', detail: 'Only page 1.' }] });
  //#endregion
  return outcome;
}

export function example_failure() {
  //#region failure
  const outcome = failure(toolError('invalid-argument', 'missing-path', '`path` is required.'));
  outcome.status; // 'error'
  //#endregion
  return outcome;
}

export function example_ToolFailure() {
  //#region ToolFailure
  throw new ToolFailure({ category: 'no-target', code: 'window-not-found', detail: 'No window titled "Report".' });
  //#endregion
}

export function example_classifyThrown() {
  //#region classifyThrown
  const error = classifyThrown(Object.assign(new Error("ENOENT: no such file, open '/home/me/a.txt'"), { code: 'ENOENT' }));
  error.category; // 'no-target'
  error.detail; // "ENOENT: no such file, open '<path>'"
  //#endregion
  return error;
}

export function example_encodeMcec() {
  //#region encodeMcec
  const losses: Loss[] = [];
  const doc = encodeMcec({ status: 'ok', result: [1, 2], runId: 'r1' }, { losses });
  // doc: { ok: true, result: { value: [1, 2] } }; losses: /result wrapped-non-object, /runId not-representable
  //#endregion
  return doc;
}

export function example_decodeMcec() {
  //#region decodeMcec
  decodeMcec({ ok: false, error: { code: 't', category: 'timeout', detail: 'd' } }).error?.category; // 'timeout'
  //#endregion
}

export function example_encodeDw() {
  //#region encodeDw
  const doc = encodeDw(failure(toolError('timeout', 'wait-timeout', 'Waited 5 s')));
  doc.error; // { code: 'wait-timeout', message: 'Waited 5 s', reason: 'timed_out', retryable: true, category: 'timeout', ... }
  //#endregion
  return doc;
}

export function example_encodeContextosResult() {
  //#region encodeContextosResult
  const losses: Loss[] = [];
  encodeContextosResult(failure(toolError('timeout', 'wait-timeout', 'Waited 5 s')), { losses }).error; // 'Waited 5 s'
  //#endregion
}

export function example_convert() {
  //#region convert
  const { document, losses } = convert({ ok: true, result: { n: 1 } }, { to: 'contextos' });
  losses.map((l) => l.code); // ['missing-required-id', ..., 'missing-latency']
  //#endregion
  return document;
}

export function example_validateEnvelope() {
  //#region validateEnvelope
  validateEnvelope({ ok: false }, 'mcec').issues[0]; // { code: 'required', path: '/error', ... }
  validateEnvelope({ hello: 1 }, 'auto').issues[0]?.code; // 'unknown-contract'
  //#endregion
}

export function example_createPreview() {
  //#region createPreview
  createPreview({ rows: [1, 2, 3] }, 10); // { text: '{"rows":[1', truncated: true }
  createPreview('日本', 4); // { text: '日', truncated: true }
  //#endregion
}

export function example_toJsonSafe() {
  //#region toJsonSafe
  const { value, replaced } = toJsonSafe({ at: new Date(0), n: 10n, f() {} });
  // value: { at: '1970-01-01T00:00:00.000Z', n: '10' }
  // replaced: /at Date -> string, /n bigint -> string, /f function -> omitted
  //#endregion
  return { value, replaced };
}
