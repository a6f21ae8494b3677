import { availableParallelism } from 'node:os';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * Test files that take the longest (most of their time in child processes: a fresh clone's
 * `npm ci` and builds, ten store-opening processes, the CLI under hostile input, replicas behind
 * nginx), started first so that the rest of the suite fills the other worker around them instead
 * of one of them finishing last alone. After the first nine, every file that took 5 s or more in a
 * full run, longest first: a fresh clone has no vitest cache of durations, and without this list a
 * 15 s file could start last (fetch-reference did, at 432 s of a 447 s run).
 */
const LONG_FIRST = [
  'test/readme.test.ts',
  'src/store/sqlite/first-open.test.ts',
  'src/cli/hostile-input.test.ts',
  'src/cli/help-examples.test.ts',
  'test/scale-out.test.ts',
  'test/mcp-conformance.test.ts',
  'test/package-install.test.ts',
  'src/cli/gateway/observe.test.ts',
  'src/report/report.test.ts',
  'src/mcp/gateway/faults.test.ts',
  'test/framework-examples.test.ts',
  'src/mcp/tasks/replica-ends.test.ts',
  'src/mcp/upstream/fetch-reference.test.ts',
  'src/store/store.test.ts',
  'test/plain-failures.test.ts',
  'src/cli/gateway/metrics-replicas.test.ts',
  'src/cli/audit-approvals.test.ts',
  'src/cli/gateway-eras.test.ts',
  'test/built-package.test.ts',
  'src/cli/gateway/lifecycle.test.ts',
  'src/mcp/gateway/output-schema.test.ts',
  'test/audit-crash.test.ts',
  'src/cli/audit.test.ts',
  'src/mcp/tasks/router.test.ts',
  'src/mcp/tasks/ends.test.ts',
  'src/mcp/gateway/gateway.test.ts',
  'src/cli/gateway/banner.test.ts',
  'src/core/contracts/convert.test.ts',
  'src/mcp/serve/eras.test.ts',
  'src/mcp/upstream/isolation.test.ts',
  'test/build-if-stale.test.ts',
  'src/cli/gateway-process.test.ts',
  'src/store/crash.test.ts',
  'test/call-log-privacy.test.ts',
  'src/store/sqlite/wal-bound.test.ts',
  'src/core/contracts/revisions.test.ts',
  'src/cli/messages.test.ts',
  'src/runtime/cross-process.test.ts',
  'src/mcp/rounds/confirm.test.ts',
];

/** Test files that import other test files to run them again under a plain reference. */
const RUN_OTHERS_AGAIN = ['src/runtime/references-ids.test.ts', 'src/runtime/references.test.ts', 'src/mcp/upstream/fetch-reference.test.ts'];

class LongFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (spec: TestSpecification): number => {
      const i = LONG_FIRST.findIndex((f) => spec.moduleId.endsWith(`/${f}`));
      return i === -1 ? LONG_FIRST.length : i;
    };
    // Array.prototype.sort is stable: within a rank, the base sequencer's order stays.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  resolve: {
    // The package imports its core by its own name (`tool-envelope/core`, the built bundle in Node);
    // the tests run the sources instead, so the name points at src/core here.
    alias: [{ find: /^tool-envelope\/core$/, replacement: fileURLToPath(new URL('./src/core/index.ts', import.meta.url)) }],
  },
  test: {
    globalSetup: ['./test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    projects: [
      // Files that run other test files again under a plain reference (they import them after
      // turning it on) need those files' modules evaluated afresh: one process each.
      { extends: true, test: { name: 'own-process', include: RUN_OTHERS_AGAIN } },
      // The rest run one after another in a worker's one module graph, rather than evaluating each
      // file's imports again (about a second a file for the gateway's); what a file changes in the
      // process is put back when it ends (test/setup/restore-globals.ts).
      {
        extends: true,
        test: {
          name: 'shared',
          include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: RUN_OTHERS_AGAIN,
          isolate: false,
          setupFiles: ['./test/setup/restore-globals.ts'],
        },
      },
    ],
    // Vitest's default is one worker fewer than the cores. Many files wait on child processes and
    // browsers: on a 2-core machine two workers left about a fifth of the CPU idle, and a worker more
    // than the cores ran src/mcp/gateway and src/cli/gateway in 80 s against 87 s.
    maxWorkers: availableParallelism() + 1,
    sequence: { sequencer: LongFilesFirst },
    // On CI a JSON report as well, from which .ci/run prints the plain "N passed, N failed" line.
    reporters: process.env.CI ? ['default', ['json', { outputFile: 'vitest-report.json' }]] : ['default'],
  },
});
