/**
 * `describe` for tests that need something beside node_modules (scripts/test-prereqs.mjs, which
 * `npm test` runs first, installs what it can): without it, the block is one failing test that says
 * what to install or which variable to set. Never a skip: a suite that passes has run them all.
 */
import { describe, it } from 'vitest';
import { locate, missingMessage, prereq } from '../scripts/test-prereqs.mjs';

/** `describe(name)` with `found` given to the body; when `found` is empty, one test failing with `missing`. */
export function describeWith(name: string, found: string | undefined, tool: string, missing: string, fn: (found: string) => void): void {
  if (found) {
    describe(name, () => fn(found));
    return;
  }
  describe(name, () => {
    it(`needs ${tool}`, () => {
      throw new Error(missing);
    });
  });
}

/** `describeWith` for a prerequisite of scripts/test-prereqs.mjs, by its Debian package; the body gets its path. */
export function describeNeeding(debian: string, name: string, fn: (path: string) => void): void {
  const row = prereq(debian);
  describeWith(name, locate(row), row.tool, missingMessage(row), fn);
}
