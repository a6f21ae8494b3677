/**
 * What a model is shown of an outcome, the same for every framework: on success the result (and
 * the warnings), on failure the error's category, code, detail, retryable and remediation, built
 * from the envelope so that the model can act on it. The application keeps the full envelope.
 */
import {
  type ContractId,
  contracts,
  isContractId,
  ToolEnvelopeError,
  type JsonObject,
  type JsonValue,
  type ToolOutcome,
  defaultRemediation,
  isSuccessStatus,
} from 'tool-envelope/core';

/** The model-facing error of a failed outcome: the closed category, what to do, whether to retry. */
export function modelError(outcome: ToolOutcome): JsonObject {
  const e = outcome.error;
  const category = e?.category ?? 'internal';
  const view: JsonObject = {
    status: outcome.status,
    category,
    code: e?.code ?? null,
    detail: e?.detail ?? null,
    retryable: e?.retryable ?? false,
    remediation: e?.remediation ?? defaultRemediation(category),
  };
  if (e?.retryAfterMs !== undefined) view.retryAfterMs = e.retryAfterMs;
  return view;
}

/** The model-facing value of a successful outcome: its result, with the warnings when there are any. */
export function modelResult(outcome: ToolOutcome): JsonValue {
  const result = outcome.result ?? null;
  return outcome.warnings?.length ? { result, warnings: outcome.warnings.map((w) => ({ code: w.code, detail: w.detail })) } : result;
}

/**
 * The model-facing text of any outcome: the result as JSON on success; on failure one line the
 * model can act on (category, code, detail, whether to retry, remediation).
 */
export function modelText(outcome: ToolOutcome): string {
  if (isSuccessStatus(outcome.status)) return JSON.stringify(modelResult(outcome));
  const v = modelError(outcome);
  const head =
    outcome.status === 'paused'
      ? 'Tool call paused, waiting for a human approval (do not call it again)'
      : outcome.status === 'rejected'
        ? 'Tool call not approved (do not retry it)'
        : outcome.status === 'blocked'
          ? 'Tool call blocked by policy'
          : 'Tool error';
  return `${head} [${String(v.category)}/${String(v.code ?? 'error')}]: ${String(v.detail ?? '')} Retryable: ${v.retryable ? 'yes' : 'no'}. Remediation: ${String(v.remediation)}`;
}

/**
 * The envelope of an outcome in one contract (ContextOS: the result envelope).
 *
 * @throws ToolEnvelopeError `unknown-contract` when `contract` is not `mcec`, `dw` or `contextos`.
 */
export function envelopeOf(outcome: ToolOutcome, contract: ContractId): JsonObject {
  return contracts[checkContract(contract)].encode(outcome) as unknown as JsonObject;
}

/**
 * Checks an adapter's `contract` option (default `mcec`).
 *
 * @throws ToolEnvelopeError `unknown-contract`.
 */
export function checkContract(contract: unknown): ContractId {
  if (contract === undefined) return 'mcec';
  if (!isContractId(contract)) throw new ToolEnvelopeError('unknown-contract', `unknown contract ${JSON.stringify(contract)}: use mcec, dw or contextos`);
  return contract;
}
