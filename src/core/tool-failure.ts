/**
 * The typed failure a tool throws on purpose: the runtime returns its error
 * as the outcome, unchanged. (`classifyThrown` in `classify.ts` handles
 * everything else a tool throws.)
 */
import type { ToolError } from './model.js';
import { ToolEnvelopeError } from './errors.js';
import { defaultRetryable, isErrorCategory } from './taxonomy.js';

/**
 * The fields a tool gives when it fails on purpose; `category`, `code` and
 * `detail` are required, everything else is optional.
 */
export type ToolFailureInit = Pick<ToolError, 'category'> & {
  code: string;
  detail: string;
} & Omit<Partial<ToolError>, 'category' | 'code' | 'detail' | 'categoryInferred'>;

/**
 * A typed failure: throw it from a tool handler (or call `ctx.fail(...)`) and
 * the runtime returns exactly this error as the outcome, unchanged.
 *
 * @example
 * ```ts
 * throw new ToolFailure({ category: 'no-target', code: 'window-not-found', detail: 'No window titled "Report".' });
 * ```
 */
export class ToolFailure extends Error {
  /** The canonical error this failure stands for (`retryable` filled from the category when not given). */
  readonly toolError: ToolError;

  constructor(init: ToolFailureInit, options?: { cause?: unknown }) {
    super(init.detail, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ToolFailure';
    if (!isErrorCategory(init.category)) {
      throw new ToolEnvelopeError('invalid-option', `ToolFailure: unknown category ${JSON.stringify(String(init.category))}`);
    }
    const error: ToolError = { ...init, retryable: init.retryable ?? defaultRetryable(init.category) };
    this.toolError = error;
  }
}

/** True for a {@link ToolFailure}, also one made by another copy of this library. */
export function isToolFailure(value: unknown): value is ToolFailure {
  if (value instanceof ToolFailure) return true;
  return value instanceof Error && value.name === 'ToolFailure' && isToolErrorShape((value as unknown as { toolError?: unknown }).toolError);
}

/**
 * True for an object with the shape of a canonical {@link ToolError}: a known
 * `category`, and string `code` and `detail`.
 */
export function isToolErrorShape(value: unknown): value is ToolError {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  return isErrorCategory(v.category) && typeof v.code === 'string' && typeof v.detail === 'string';
}
