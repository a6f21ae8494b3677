/**
 * The child-process transport's two wires, for `describe.each`: the fast wire (the product) and
 * the plain reference wire (stdio-wire.ts), so that the tests of the trick run on its reference too.
 */
import { afterAll, beforeAll } from 'vitest';
import { useReferenceStdioWire } from '../stdio.js';

/** `[name, reference]` rows for `describe.each`. */
export const STDIO_WIRES: [string, boolean][] = [
  ['fast', false],
  ['plain reference', true],
];

/** Registers hooks that make the enclosing `describe` run on the reference wire (or the fast one). */
export function onStdioWire(reference: boolean): void {
  let before: boolean;
  beforeAll(() => {
    before = useReferenceStdioWire(reference);
  });
  afterAll(() => {
    useReferenceStdioWire(before);
  });
}
