/**
 * The one error vocabulary: MCEC's closed category set (its 2026-07 revision's twelve), the seven ContextOS
 * result statuses and the five ordered ContextOS approval modes.
 */
export const ERROR_CATEGORIES = [
  'timeout',
  'ambiguous-selector',
  'stale-element',
  'no-target',
  'invalid-argument',
  'capture-blank',
  'ocr-blank',
  'ocr-no-text',
  'focus',
  'elevation',
  'foreground',
  'internal',
] as const;

/** The ten categories of the founding MCEC 3.0 schema (its 2026-07 revision added `ocr-blank` and `ocr-no-text`). */
export const FOUNDING_MCEC_CATEGORIES: readonly ErrorCategory[] = ERROR_CATEGORIES.filter((c) => c !== 'ocr-blank' && c !== 'ocr-no-text');

/**
 * The founding MCEC category a category is written as: itself, or for the two OCR categories of the
 * 2026-07 revision `capture-blank` (the capture, read as text, was blank), the category the MCEC rule
 * "map a new failure mode onto an existing category" gives them.
 */
export function foundingMcecCategory(category: ErrorCategory): ErrorCategory {
  return category === 'ocr-blank' || category === 'ocr-no-text' ? 'capture-blank' : category;
}

/** A coarse failure class from the closed MCEC taxonomy. Agents may switch on it exhaustively. */
export type ErrorCategory = (typeof ERROR_CATEGORIES)[number];

/** True when `value` is one of the twelve categories. */
export function isErrorCategory(value: unknown): value is ErrorCategory {
  return typeof value === 'string' && (ERROR_CATEGORIES as readonly string[]).includes(value);
}

const RETRYABLE: Readonly<Record<ErrorCategory, boolean>> = {
  // Waiting longer or re-observing can succeed.
  timeout: true,
  // The same call fails the same way; the agent must change the selector first.
  'ambiguous-selector': false,
  // Re-querying yields a fresh reference.
  'stale-element': true,
  // The target may appear later.
  'no-target': true,
  // Never retry unchanged.
  'invalid-argument': false,
  // Output was produced but blank; a later capture may not be.
  'capture-blank': true,
  // The image OCR read was blank: as for a blank capture, a later one may not be.
  'ocr-blank': true,
  // OCR read the image and found no text: the same image gives the same answer.
  'ocr-no-text': false,
  // Retryable after setting focus.
  focus: true,
  // OS policy constrained.
  foreground: false,
  // Needs higher privilege: not agent-recoverable.
  elevation: false,
  // A fault of the tool itself: not agent-recoverable.
  internal: false,
};

/** The default `retryable` answer for a category, used when a failure does not say. */
export function defaultRetryable(category: ErrorCategory): boolean {
  return RETRYABLE[category];
}

const RECOVERY: Readonly<Record<ErrorCategory, string>> = {
  timeout: 'Re-observe, extend the wait, or abandon.',
  'ambiguous-selector': 'Add disambiguators to the selector and retry.',
  'stale-element': 'Re-query for a fresh reference and retry.',
  'no-target': 'Broaden or discover the target, or wait for it to appear.',
  'invalid-argument': 'Fix the arguments; do not retry unchanged.',
  'capture-blank': 'The output was blank; inspect partialResult and retry the capture.',
  'ocr-blank': 'The image given to OCR was blank; capture again and retry.',
  'ocr-no-text': 'OCR found no text; check the region or target before retrying.',
  focus: 'Set focus on the target and retry.',
  foreground: 'The operating system refused to bring the target to the foreground.',
  elevation: 'Needs higher privilege or an approval; not recoverable by the agent.',
  internal: 'A fault of the tool itself; not recoverable by the agent.',
};

/** The recovery an agent should take for a category, as one sentence. */
export function defaultRemediation(category: ErrorCategory): string {
  return RECOVERY[category];
}

/**
 * The machine `reason` Durable Workflow gets for each category when an error states none (the
 * category defaults of docs/contracts.md, beside {@link defaultRetryable} and {@link defaultRemediation}).
 */
export const DW_REASONS: Readonly<Record<ErrorCategory, string>> = {
  timeout: 'timed_out',
  'ambiguous-selector': 'ambiguous_selector',
  'stale-element': 'stale_element',
  'no-target': 'target_not_found',
  'invalid-argument': 'invalid_argument',
  'capture-blank': 'capture_blank',
  'ocr-blank': 'ocr_blank',
  'ocr-no-text': 'ocr_no_text',
  focus: 'focus_required',
  foreground: 'foreground_refused',
  elevation: 'elevation_required',
  internal: 'internal_error',
};

/** The default DW `reason` of a category. */
export function dwDefaultReason(category: ErrorCategory): string {
  return DW_REASONS[category];
}

/** The seven ContextOS result statuses; canonical outcomes use the same set. */
export const OUTCOME_STATUSES = ['ok', 'error', 'paused', 'completed', 'failed', 'rejected', 'blocked'] as const;

/** A canonical outcome status. `ok`/`completed` are successes; the rest are not. */
export type OutcomeStatus = (typeof OUTCOME_STATUSES)[number];

/** True when `value` is one of the seven statuses. */
export function isOutcomeStatus(value: unknown): value is OutcomeStatus {
  return typeof value === 'string' && (OUTCOME_STATUSES as readonly string[]).includes(value);
}

/** True for the statuses in which the tool achieved its goal (`ok`, `completed`). */
export function isSuccessStatus(status: OutcomeStatus): boolean {
  return status === 'ok' || status === 'completed';
}

/** The ordered ContextOS approval modes, lowest first. */
export const APPROVAL_MODES = ['read_only', 'local_write', 'network', 'delegated', 'destructive'] as const;

/** A ContextOS approval mode. */
export type ApprovalMode = (typeof APPROVAL_MODES)[number];

/** True when `value` is one of the five approval modes. */
export function isApprovalMode(value: unknown): value is ApprovalMode {
  return typeof value === 'string' && (APPROVAL_MODES as readonly string[]).includes(value);
}

/**
 * The kinds of principal a ContextOS principal chain may hold (run-context.v1
 * `Principal.kind`): the one list every area checks a principal against.
 */
export const PRINCIPAL_KINDS = ['user', 'service', 'agent', 'automation'] as const;

/** The kind of a ContextOS principal. */
export type PrincipalKind = (typeof PRINCIPAL_KINDS)[number];

/** True when `value` is one of the four principal kinds. */
export function isPrincipalKind(value: unknown): value is PrincipalKind {
  return typeof value === 'string' && (PRINCIPAL_KINDS as readonly string[]).includes(value);
}

/** The rank of a mode in the order `read_only < local_write < network < delegated < destructive`. */
export function approvalModeRank(mode: ApprovalMode): number {
  return APPROVAL_MODES.indexOf(mode);
}

/** Compares two modes: negative when `a < b`, zero when equal, positive when `a > b`. */
export function compareApprovalModes(a: ApprovalMode, b: ApprovalMode): number {
  return approvalModeRank(a) - approvalModeRank(b);
}
