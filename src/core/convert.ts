/**
 * Conversion between the three result contracts, always through the
 * canonical model: `decode` the source, `encode` the target, and report what
 * the target cannot carry.
 *
 * @example
 * ```ts
 * import { convert } from 'tool-envelope/core';
 * const { document, losses } = convert({ ok: true, result: { n: 1 } }, { to: 'dw' });
 * ```
 */
import { type ContractId, type EncodeOptions, type Loss, contracts, isContractId } from './contract.js';
import { ToolEnvelopeError } from './errors.js';
import type { ToolOutcome } from './model.js';
import type { McecToolResult } from './mcec.js';
import type { DwToolResult } from './dw.js';
import type { Dw14ToolResult } from './dw-14.js';
import type { ContextosToolResult } from './contextos.js';
import { detectContract } from './validate.js';

/**
 * The wire type of each contract.
 *
 * @example
 * ```ts
 * const doc: WireOf<'dw'> = encode(outcome, 'dw');
 * ```
 */
export interface WireTypes {
  mcec: McecToolResult;
  dw: DwToolResult;
  contextos: ContextosToolResult;
  'mcec@2026-07': McecToolResult;
  'dw@14': Dw14ToolResult;
}

/**
 * The wire type of contract `C`.
 *
 * @example
 * ```ts
 * type T = WireOf<'mcec'>; // McecToolResult
 * ```
 */
export type WireOf<C extends ContractId> = WireTypes[C];

/**
 * Options of {@link convert}.
 *
 * @example
 * ```ts
 * const opts: ConvertOptions = { to: 'mcec', from: 'auto', strict: true };
 * ```
 */
export interface ConvertOptions<To extends ContractId = ContractId> {
  /** The target contract. */
  to: To;
  /** The source contract; `auto` (default) detects it by markers. */
  from?: ContractId | 'auto';
  /** Throw `lossy-conversion` instead of returning losses. */
  strict?: boolean;
  /** Durable Workflow preview byte limit when a preview is computed (default 4096). */
  previewLimitBytes?: number;
}

/**
 * The outcome of {@link convert}.
 *
 * @example
 * ```ts
 * const r: Conversion = convert(doc, { to: 'contextos' });
 * r.losses.length; // 0 when nothing was lost
 * ```
 */
export interface Conversion<To extends ContractId = ContractId> {
  document: WireOf<To>;
  from: ContractId;
  to: To;
  losses: Loss[];
}

/**
 * Decodes a document of contract `from` (or detected, with `auto`) into the canonical outcome.
 * Throws `unknown-contract` when no contract is detected (or the document is
 * a ContextOS call, which has no outcome), `invalid-envelope` when it breaks its schema.
 *
 * @example
 * ```ts
 * decode({ ok: true, result: {} }, 'auto').status; // 'ok'
 * ```
 */
export function decode(doc: unknown, from: ContractId | 'auto' = 'auto'): ToolOutcome {
  return contracts[resolveSource(doc, from)].decode(doc);
}

/**
 * Encodes a canonical outcome for contract `to` (see the contract modules for the rules).
 *
 * @example
 * ```ts
 * const losses: Loss[] = [];
 * encode(success({ n: 1 }), 'mcec', { losses }); // { ok: true, result: { n: 1 } }
 * ```
 */
export function encode<To extends ContractId>(outcome: ToolOutcome, to: To, options?: EncodeOptions): WireOf<To> {
  if (!isContractId(to)) throw unknownContract(`unknown target contract ${JSON.stringify(to)}`);
  return contracts[to].encode(outcome, options) as WireOf<To>;
}

/**
 * Converts a result document from one contract to another through the
 * canonical model. `losses` lists every canonical field the target could not
 * carry (docs/contracts.md); with `strict`, any loss throws
 * `ToolEnvelopeError('lossy-conversion')` whose issues are the losses.
 *
 * @example
 * ```ts
 * convert({ ok: true, result: { n: 1 } }, { to: 'contextos' }).losses.map((l) => l.code);
 * // ['missing-required-id', 'missing-required-id', 'missing-required-id', 'missing-required-id', 'missing-latency']
 * ```
 */
export function convert<To extends ContractId>(doc: unknown, options: ConvertOptions<To>): Conversion<To> {
  const from = resolveSource(doc, options.from ?? 'auto');
  const to = options.to;
  const outcome = contracts[from].decode(doc);
  const losses: Loss[] = [];
  const encodeOptions: EncodeOptions = { losses };
  if (options.previewLimitBytes !== undefined) encodeOptions.previewLimitBytes = options.previewLimitBytes;
  const document = encode(outcome, to, encodeOptions);
  if (options.strict && losses.length > 0) {
    throw new ToolEnvelopeError(
      'lossy-conversion',
      `converting ${from} to ${to} would lose ${losses.length} field(s): ${losses.map((l) => l.path).join(', ')}`,
      { issues: losses.map((l) => ({ code: l.code, path: l.path, message: l.reason })) },
    );
  }
  return { document, from, to, losses };
}

function resolveSource(doc: unknown, from: ContractId | 'auto'): ContractId {
  if (from !== 'auto') {
    if (!isContractId(from)) throw unknownContract(`unknown source contract ${JSON.stringify(from)}`);
    return from;
  }
  const detected = detectContract(doc);
  if (detected === undefined) {
    throw unknownContract('no contract marker found (DW "schema", ContextOS "envelope_version", MCEC boolean "ok")');
  }
  if (detected === 'contextos-call') {
    throw unknownContract('a ContextOS call envelope is not a tool result; decode it with decodeContextosCall');
  }
  return detected;
}

function unknownContract(message: string): ToolEnvelopeError {
  return new ToolEnvelopeError('unknown-contract', message, {
    issues: [{ code: 'unknown-contract', path: '', message }],
  });
}
