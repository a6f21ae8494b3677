#!/usr/bin/env node
/**
 * The `tool-envelope` command. This is the only file that exits the process;
 * each verb lives in its own module and returns an exit code.
 *
 * @example
 * ```sh
 * tool-envelope validate --dialect auto envelopes.ndjson
 * ```
 */
import { EXIT, processIo, type CliVerb } from './io.js';

const VERBS: Record<string, { summary: string; load: () => Promise<CliVerb> }> = {
  validate: { summary: 'check envelopes against their contract', load: () => import('./validate.js') },
  convert: { summary: 'convert envelopes between contracts, reporting losses', load: () => import('./convert.js') },
  schema: { summary: "print a contract's JSON Schema", load: () => import('./schema.js') },
  gateway: { summary: 'serve MCP in front of upstream servers, wrapping every tool result', load: () => import('./gateway.js') },
  audit: { summary: 'query the call log: list, show, stats, export, approvals, reports', load: () => import('./audit.js') },
};

function usage(): string {
  const width = Math.max(...Object.keys(VERBS).map((v) => v.length));
  const lines = Object.entries(VERBS).map(([name, v]) => `  ${name.padEnd(width)}  ${v.summary}`);
  return [
    'Usage: tool-envelope <verb> [options]',
    '',
    'Verbs:',
    ...lines,
    '',
    'Run `tool-envelope <verb> --help` for the options and examples of a verb.',
    'Exit codes: 0 success, 1 invalid/lossy/failed result, 2 usage or I/O error.',
    '',
  ].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const [verb, ...rest] = argv;
  const io = processIo(shutdownSignal());
  if (verb === undefined || verb === '--help' || verb === '-h' || verb === 'help') {
    io.stdout.write(usage());
    return verb === undefined ? EXIT.USAGE : EXIT.OK;
  }
  if (verb === '--version' || verb === '-v') {
    const { createRequire } = await import('node:module');
    const pkg = createRequire(import.meta.url)('../../../package.json') as { version: string };
    io.stdout.write(`${pkg.version}\n`);
    return EXIT.OK;
  }
  const entry = VERBS[verb];
  if (!entry) {
    io.stderr.write(`tool-envelope: unknown verb '${verb}'\n\n${usage()}`);
    return EXIT.USAGE;
  }
  const mod = await entry.load();
  if (rest.includes('--help') || rest.includes('-h')) {
    const text = mod.helpFor ? await mod.helpFor(rest) : mod.help;
    io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
    return EXIT.OK;
  }
  const code = await mod.run(rest, io);
  if (mod.exitWhenDone) {
    // Leaves a moment for stderr and the last answers to drain; unref'd, so a clean exit is not delayed.
    setTimeout(() => process.exit(code), 50).unref();
  }
  return code;
}

function shutdownSignal(): AbortSignal {
  const controller = new AbortController();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => controller.abort(new Error(`received ${sig}`)));
  }
  return controller.signal;
}

// A reader that goes away (`tool-envelope audit export | head`) ends the output, not the process with a stack trace.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(process.exitCode ?? 0);
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`tool-envelope: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = EXIT.USAGE;
  },
);
