/**
 * Shared argument parsing for CLI verbs: `node:util` `parseArgs` with usage
 * errors turned into one stderr line and exit code 2.
 *
 * @example
 * ```ts
 * const parsed = parseVerbArgs('schema', args, {}, io);
 * if (typeof parsed === 'number') return parsed;
 * ```
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { EXIT, type CliIo } from './io.js';

/**
 * Writes a usage error for `verb` and returns {@link EXIT.USAGE}.
 *
 * @example
 * ```ts
 * return usageError('convert', io, '--to is required');
 * ```
 */
export function usageError(verb: string, io: CliIo, message: string): number {
  io.stderr.write(`tool-envelope ${verb}: ${message}\nRun 'tool-envelope ${verb} --help' for usage.\n`);
  return EXIT.USAGE;
}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * Parsed flags and positionals of a verb.
 *
 * @example
 * ```ts
 * const p: ParsedVerbArgs = { values: { format: 'json' }, positionals: ['a.ndjson'] };
 * ```
 */
export interface ParsedVerbArgs {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
}

/**
 * Parses `args` strictly (unknown flags are usage errors; `-` is a positional).
 * Returns the parsed arguments, or the exit code after writing a usage error.
 *
 * @example
 * ```ts
 * const p = parseVerbArgs('validate', ['--format', 'json', 'a.ndjson'], { format: { type: 'string' } }, io);
 * ```
 */
export function parseVerbArgs(verb: string, args: string[], options: Options, io: CliIo): ParsedVerbArgs | number {
  try {
    const { values, positionals } = parseArgs({ args, options, allowPositionals: true, strict: true });
    return { values: values as ParsedVerbArgs['values'], positionals };
  } catch (e) {
    return usageError(verb, io, e instanceof Error ? e.message : String(e));
  }
}

/**
 * Reads a `--flag` value that must be one of `allowed`; returns the value,
 * `fallback` when absent, or `undefined` after a usage error was written.
 *
 * @example
 * ```ts
 * const format = oneOf('validate', io, 'format', values.format, ['text', 'json'], 'text');
 * ```
 */
export function oneOf<T extends string>(
  verb: string,
  io: CliIo,
  flag: string,
  value: unknown,
  allowed: readonly T[],
  fallback: T,
): T | undefined {
  if (value === undefined) return fallback;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  usageError(verb, io, `--${flag} must be one of ${allowed.join(', ')} (got '${String(value)}')`);
  return undefined;
}
