#!/usr/bin/env node
/**
 * The `tool-envelope` command. This is the only file that exits the process;
 * each verb lives in its own module and returns an exit code.
 */
import { isToolEnvelopeError, missingPeer } from 'tool-envelope/core';
import { EXIT, processIo, type CliVerb } from './io.js';
import { suggest } from './suggest.js';

// `graceMs`: how long a verb may take to stop after SIGINT/SIGTERM before the process exits anyway
// (a read blocked on a FIFO or a terminal never returns by itself). `interruptFails`: a verb
// stopped half-way through its input exits 130/143, not with the verdict of what it read.
interface VerbEntry {
  summary: string;
  load: () => Promise<CliVerb>;
  graceMs: number;
  interruptFails: boolean;
}

const VERBS: Record<string, VerbEntry> = {
  validate: { summary: 'check envelopes against their contract', load: () => import('./validate.js'), graceMs: 500, interruptFails: true },
  convert: { summary: 'convert envelopes between contracts, reporting losses', load: () => import('./convert.js'), graceMs: 500, interruptFails: true },
  schema: { summary: "print a contract's JSON Schema", load: () => import('./schema.js'), graceMs: 500, interruptFails: true },
  gateway: {
    summary: 'serve MCP in front of upstream servers, wrapping every tool result',
    load: () => import('./gateway.js'),
    graceMs: 10_000,
    interruptFails: false,
  },
  policy: {
    summary: 'check a policy file and its test cases, explain its decision for a call',
    load: () => import('./policy.js'),
    graceMs: 500,
    interruptFails: true,
  },
  console: {
    summary: 'serve the operator console: approvals inbox and audit log in the browser',
    load: () => import('./console.js'),
    graceMs: 5_000,
    interruptFails: false,
  },
  audit: {
    summary: 'query the call log: list, show, stats, export, approvals, reports',
    load: () => import('./audit.js'),
    graceMs: 5_000,
    interruptFails: false,
  },
};

const EXIT_CODES = 'Exit codes: 0 success, 1 invalid/lossy/failed result, 2 usage or I/O error, 130/143 interrupted.';

// The optional peer dependencies a verb may need (the library installs none of them).
const DRIVERS = [
  '@modelcontextprotocol/server',
  '@modelcontextprotocol/client',
  '@modelcontextprotocol/core',
  '@modelcontextprotocol/node',
  '@modelcontextprotocol/ext-tasks',
  'better-sqlite3',
  'pg',
  '@opentelemetry/api',
  '@bufbuild/cel',
];

const SIGNAL_EXIT = { SIGINT: 130, SIGTERM: 143 } as const;
let interrupted: number | undefined;

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
    EXIT_CODES,
    '',
  ].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const [verb, ...rest] = argv;
  const entry = verb === undefined ? undefined : owned(VERBS, verb);
  const io = processIo(shutdownSignal(entry?.graceMs ?? 500));
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
  if (!entry) {
    const near = suggest(verb, Object.keys(VERBS));
    io.stderr.write(`tool-envelope: unknown verb '${verb.slice(0, 80)}'${near ? ` (did you mean '${near}'?)` : ''}\n\n${usage()}`);
    return EXIT.USAGE;
  }
  let mod: CliVerb;
  try {
    mod = await entry.load();
  } catch (e) {
    const missing = DRIVERS.map((pkg) => missingPeer(e, pkg, `tool-envelope ${verb}`)).find((t) => isToolEnvelopeError(t, 'missing-dependency'));
    if (missing === undefined) throw e;
    io.stderr.write(`tool-envelope: ${(missing as Error).message}\n(or install the CLI with every driver: npm install -g tool-envelope-cli)\n`);
    return EXIT.USAGE;
  }
  // Options end at '--': what follows (a gateway's upstream command) may have its own --help.
  const dash = rest.indexOf('--');
  const own = dash === -1 ? rest : rest.slice(0, dash);
  if (own.includes('--help') || own.includes('-h')) {
    let text = mod.helpFor ? await mod.helpFor(own) : mod.help;
    if (!text.endsWith('\n')) text += '\n';
    // Every help ends with the exit codes; a sub-verb whose own text does not give them gets the shared line.
    if (!/^Exit codes:/m.test(text)) text += `\n${EXIT_CODES}\n`;
    io.stdout.write(text);
    return EXIT.OK;
  }
  const code = await mod.run(rest, io);
  const result = interrupted !== undefined && entry.interruptFails ? interrupted : code;
  if (mod.exitWhenDone) {
    // Leaves a moment for stderr and the last answers to drain; unref'd, so a clean exit is not delayed.
    setTimeout(() => process.exit(result), 50).unref();
  }
  return result;
}

function owned(verbs: Record<string, VerbEntry>, name: string): VerbEntry | undefined {
  return Object.hasOwn(verbs, name) ? verbs[name] : undefined;
}

function shutdownSignal(graceMs: number): AbortSignal {
  const controller = new AbortController();
  const handlers = new Map<NodeJS.Signals, () => void>();
  // A second signal, or a verb that does not stop within its grace time, ends the process by the
  // signal's default action: process.exit() would wait for a thread blocked reading a FIFO.
  const die = (sig: NodeJS.Signals): void => {
    for (const [s, h] of handlers) process.off(s, h);
    process.kill(process.pid, sig);
  };
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    const handler = (): void => {
      if (controller.signal.aborted) {
        die(sig);
        return;
      }
      interrupted = SIGNAL_EXIT[sig];
      controller.abort(new Error(`received ${sig}`));
      setTimeout(() => die(sig), graceMs).unref();
    };
    handlers.set(sig, handler);
    process.on(sig, handler);
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
