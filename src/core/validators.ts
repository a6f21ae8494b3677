// Where the contract modules get the generated validators from: one place that imports
// them all, so that a contract module names its set and nothing else. The allErrors set
// is built on first use (check*()), since building it is work most processes never need.
import type { AjvValidator } from './wire.js';
import { contextosCallFast, contextosFast, contextosResultFast } from './generated/validators-fast-contextos.js';
import { dwFast } from './generated/validators-fast-dw.js';
import { mcecFast } from './generated/validators-fast-mcec.js';
import { createFullValidators } from './generated/validators-full.js';
import { createRevisionFullValidators } from './generated/validators-full-revisions.js';
import { dw14Fast } from './generated/validators-fast-dw-14.js';
import { mcec202607Fast } from './generated/validators-fast-mcec-2026-07.js';

/** The first-error validators of each contract, by group. */
export interface FastValidators {
  mcec: { mcecFast: AjvValidator };
  dw: { dwFast: AjvValidator };
  contextos: { contextosFast: AjvValidator; contextosCallFast: AjvValidator; contextosResultFast: AjvValidator };
  'mcec@2026-07': { mcec202607Fast: AjvValidator };
  'dw@14': { dw14Fast: AjvValidator };
}

/** The allErrors validators `check*()` reports from. */
export type FullValidators = ReturnType<typeof createFullValidators> & ReturnType<typeof createRevisionFullValidators>;

const fast = {
  mcec: { mcecFast },
  dw: { dwFast },
  contextos: { contextosFast, contextosCallFast, contextosResultFast },
  'mcec@2026-07': { mcec202607Fast },
  'dw@14': { dw14Fast },
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
 * const full = loadFullValidators({ maxErrors: Number.POSITIVE_INFINITY });
 * full.mcecFull({ ok: 1 }); // false, with full.mcecFull.errors
 * ```
 */
export function loadFullValidators(limits: { maxErrors: number }): ReturnType<typeof createFullValidators> {
  return createFullValidators(limits);
}

/**
 * Builds the full (allErrors) validators of the later revisions (MCEC 2026-07, DW 14); the caller keeps the result.
 *
 * @example
 * ```ts
 * loadRevisionFullValidators({ maxErrors: Infinity }).dw14Full({}); // false
 * ```
 */
export function loadRevisionFullValidators(limits: { maxErrors: number }): ReturnType<typeof createRevisionFullValidators> {
  return createRevisionFullValidators(limits);
}
