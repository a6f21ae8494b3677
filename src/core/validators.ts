// Where the generated validators come from. In the sources (and in the portable build
// of the core) they are imported here; the Node build of the core replaces this module
// (scripts/bundle-core.mjs) by one that `require`s each generated set, as a separate
// file, on its first use, so that importing the core parses none of them.
import type { AjvValidator } from './wire.js';
import { contextosCallFast, contextosFast, contextosResultFast } from './generated/validators-fast-contextos.js';
import { dwFast } from './generated/validators-fast-dw.js';
import { mcecFast } from './generated/validators-fast-mcec.js';
import { createFullValidators } from './generated/validators-full.js';

/** The first-error validators of each contract, by group. */
export interface FastValidators {
  mcec: { mcecFast: AjvValidator };
  dw: { dwFast: AjvValidator };
  contextos: { contextosFast: AjvValidator; contextosCallFast: AjvValidator; contextosResultFast: AjvValidator };
}

/** The allErrors validators `check*()` reports from. */
export type FullValidators = ReturnType<typeof createFullValidators>;

const fast = {
  mcec: { mcecFast },
  dw: { dwFast },
  contextos: { contextosFast, contextosCallFast, contextosResultFast },
} as unknown as FastValidators;

/**
 * The fast validators of one contract group (loaded on first use in the Node build).
 *
 * @example
 * ```ts
 * const { mcecFast } = loadFastValidators('mcec');
 * mcecFast({ ok: true }); // true
 * ```
 */
export function loadFastValidators<G extends keyof FastValidators>(group: G): FastValidators[G] {
  return fast[group];
}

/**
 * Builds the full (allErrors) validators; the caller keeps the result.
 *
 * @example
 * ```ts
 * const full = loadFullValidators({ maxErrors: Number.POSITIVE_INFINITY });
 * full.mcecFull({ ok: 1 }); // false, with full.mcecFull.errors
 * ```
 */
export function loadFullValidators(limits: { maxErrors: number }): FullValidators {
  return createFullValidators(limits);
}
