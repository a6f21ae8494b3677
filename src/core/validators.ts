// Where the contract modules get the generated validators from: one place that imports
// them all, so that a contract module names its set and nothing else. The allErrors set
// is built on first use (check*()), since building it is work most processes never need.
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
 * The fast validators of one contract group.
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
 * const full = loadFullValidators();
 * full.mcecFull({ ok: 1 }); // false, with full.mcecFull.errors
 * ```
 */
export function loadFullValidators(): FullValidators {
  return createFullValidators();
}
