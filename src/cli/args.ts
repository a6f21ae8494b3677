/**
 * Shared argument parsing for CLI verbs: `node:util` `parseArgs` with usage
 * errors turned into one stderr line and exit code 2.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { printable } from '../store/printable.js';
import { EXIT, type CliIo } from './io.js';
import { suggest } from './suggest.js';

/**
 * Writes a usage error for `verb` and returns {@link EXIT.USAGE}. The message often quotes a file
 * or an argument (a config key, a tokens file's key): each of its lines is written inert.
 */
export function usageError(verb: string, io: CliIo, message: string): number {
  io.stderr.write(`tool-envelope ${verb}: ${message.split('\n').map(printable).join('\n')}\nRun 'tool-envelope ${verb} --help' for usage.\n`);
  return EXIT.USAGE;
}

type Options = NonNullable<ParseArgsConfig['options']>;

/** Parsed flags and positionals of a verb. */
export interface ParsedVerbArgs {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
}

/**
 * Parses `args` strictly (unknown flags are usage errors; `-` is a positional).
 * Returns the parsed arguments, or the exit code after writing a usage error.
 */
export function parseVerbArgs(verb: string, args: string[], options: Options, io: CliIo): ParsedVerbArgs | number {
  try {
    const { values, positionals } = parseArgs({ args: negativeValues(args, options), options, allowPositionals: true, strict: true });
    return { values: values as ParsedVerbArgs['values'], positionals };
  } catch (e) {
    return usageError(
      verb,
      io,
      parseErrorMessage(
        e,
        Object.keys(options).map((o) => `--${o}`),
      ),
    );
  }
}

/**
 * `args` with a negative number after a flag that takes a value (`--deadline -5`, `--since -5m`)
 * joined to it (`--deadline=-5`): `parseArgs` reads `-5` as a flag and says the option needs a value,
 * where the verb's own check says what is wrong with the value. Arguments after `--` are left.
 */
export function negativeValues(args: readonly string[], options: Options): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      out.push(...args.slice(i));
      break;
    }
    const next = args[i + 1];
    if (a.startsWith('--') && options[a.slice(2)]?.type === 'string' && next !== undefined && /^-\.?\d/.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

/**
 * A plain message for a `parseArgs` error (Node's own text has an unbalanced quote and advice
 * that does not fit): the flag at fault, the closest known flag, and `positionalHint` for an
 * argument that is not a flag.
 */
export function parseErrorMessage(error: unknown, flags: readonly string[], positionalHint?: (arg: string) => string): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  const quoted = /'([^']*)'/.exec(message)?.[1] ?? '';
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const flag = quoted.split('=')[0]!;
    const near = suggest(flag, flags);
    return `unknown option '${flag}'${near ? ` (did you mean ${near}?)` : ''}`;
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    const flag = quoted.split(' ')[0]!;
    return /does not take an argument/.test(message) ? `option ${flag} takes no value` : `option ${flag} needs a value`;
  }
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') return `unexpected argument '${quoted}'${positionalHint ? `: ${positionalHint(quoted)}` : ''}`;
  return message;
}

/**
 * Reads a `--flag` value that must be one of `allowed`; returns the value,
 * `fallback` when absent, or `undefined` after a usage error was written.
 */
export function oneOf<T extends string>(verb: string, io: CliIo, flag: string, value: unknown, allowed: readonly T[], fallback: T): T | undefined {
  if (value === undefined) return fallback;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  usageError(verb, io, `--${flag} must be one of ${allowed.join(', ')} (got '${String(value)}')`);
  return undefined;
}

/** The default of `--max-issues`: issues listed per document. */
export const DEFAULT_MAX_ISSUES = 100;

/** Reads `--max-issues` (a positive integer, default {@link DEFAULT_MAX_ISSUES}); `undefined` after a usage error. */
export function maxIssuesOf(verb: string, io: CliIo, value: unknown): number | undefined {
  if (value === undefined) return DEFAULT_MAX_ISSUES;
  const raw = String(value);
  const n = /^\d{1,9}$/.test(raw) ? Number(raw) : 0;
  if (n >= 1) return n;
  usageError(verb, io, `--max-issues must be a positive integer (got '${raw}')`);
  return undefined;
}
