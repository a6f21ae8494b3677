import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // The package imports its core by its own name (`tool-envelope/core`, the built bundle in Node);
    // the tests run the sources instead, so the name points at src/core here.
    alias: [{ find: /^tool-envelope\/core$/, replacement: fileURLToPath(new URL('./src/core/index.ts', import.meta.url)) }],
  },
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['./test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // On CI a JSON report as well, from which .ci/run prints the plain "N passed, N failed" line.
    reporters: process.env.CI ? ['default', ['json', { outputFile: 'vitest-report.json' }]] : ['default'],
  },
});
