/**
 * `tool-envelope audit verify`: checks the call log against its writers' signed hash chains and
 * reports every record that was edited, deleted or inserted behind the store's back.
 */
import { resolve } from 'node:path';
import { CHAIN_PURPOSE, verifyAuditChain, type ChainReader, type ChainReport } from '../store/chain.js';
import { loadOperatorKey } from '../store/operator-key.js';
import { oneOf, parseVerbArgs, usageError } from './args.js';
import { STORE_HELP, STORE_OPTIONS, printable, printableJson, withStore } from './audit-common.js';
import { EXIT, type CliIo } from './io.js';

/** Help of `audit verify`. */
export const help = `tool-envelope audit verify [--format text|json] [--key-file FILE]

Checks every record of the call log against the hash chain of the process that wrote it (each
writer signs its chain with a key derived from the operator key). Reports each record that was
edited, deleted or inserted since ('TAMPERED'), and exits 1 when there is one. Records written
before the chain existed (by an older version) are counted as unverifiable, not as tampered. When
no writer's chain is signed by the key given (another key than the writers'), it says 'WRONG KEY'
with both key ids and exits 2: nothing could be verified.

The operator key: $TOOL_ENVELOPE_KEY, else --key-file, else $TOOL_ENVELOPE_KEY_FILE, else
~/.config/tool-envelope/operator.key (the one the writers used).

Options:
${STORE_HELP}
  --format text|json    output (default text)
  --key-file FILE       the operator key file

Exit codes: 0 ok; 1 tampered; 2 wrong key (no writer's chain signed by it), usage, store or I/O
error; 130/143 interrupted.

Examples:
  tool-envelope audit verify --store ./tool-envelope.db
  TOOL_ENVELOPE_KEY=... tool-envelope audit verify --store postgres://app@db/agents --format json
`;

const verb = 'audit verify';

/** Runs `tool-envelope audit verify`. */
export async function run(args: string[], io: CliIo): Promise<number> {
  const p = parseVerbArgs(verb, args, { ...STORE_OPTIONS, format: { type: 'string' }, 'key-file': { type: 'string' } }, io);
  if (typeof p === 'number') return p;
  if (p.positionals.length) return usageError(verb, io, `unexpected argument '${p.positionals[0]}'`);
  const format = oneOf(verb, io, 'format', p.values.format, ['text', 'json'] as const, 'text');
  if (format === undefined) return EXIT.USAGE;
  let key: Awaited<ReturnType<typeof loadOperatorKey>>;
  try {
    const file = p.values['key-file'];
    key = await loadOperatorKey({ env: io.env, ...(typeof file === 'string' && { file: resolve(io.cwd, file) }) });
  } catch (e) {
    io.stderr.write(`tool-envelope ${verb}: cannot load the operator key: ${(e as Error).message}\n`);
    return EXIT.USAGE;
  }
  return withStore(verb, p.values, io, async (store) => {
    const reader = (store as { chainReader?: () => ChainReader }).chainReader?.();
    if (!reader) return usageError(verb, io, `a ${store.kind} store has no hash chain to verify`);
    const report = await verifyAuditChain(reader, key.derive(CHAIN_PURPOSE));
    const wrongKey = await wrongKeyOf(reader, report, key.id);
    if (format === 'json') io.stdout.write(`${printableJson(JSON.stringify(wrongKey ? { ...report, wrongKey } : report, null, 2))}\n`);
    else if (wrongKey) {
      io.stdout.write(
        `WRONG KEY: no writer's chain is signed by this key (key id ${key.id}; the log's writers use ${printable(wrongKey.writerKeyIds.join(', '))}): nothing could be verified; give the operator key the writers used\n`,
      );
    } else {
      const lines = [
        `${report.ok ? 'ok' : 'TAMPERED'}: ${report.verified} records verified (${report.writers} writers), ${report.unverifiable} written before the chain (unverifiable), ${report.problems.length} problems`,
        ...report.problems.map((x) => `${x.kind.padEnd(8)} ${printable(x.detail)}`),
      ];
      io.stdout.write(`${lines.join('\n')}\n`);
    }
    // A wrong key establishes nothing about the log: not a verdict of tampering (1), an input to fix (2).
    return wrongKey ? EXIT.USAGE : report.ok ? EXIT.OK : EXIT.INVALID;
  });
}

/**
 * The key was not the writers' when no writer's registration verifies under it and none of them
 * names its key id (a registration naming this key that fails to verify was edited: tampering).
 */
async function wrongKeyOf(reader: ChainReader, report: ChainReport, keyId: string): Promise<{ keyId: string; writerKeyIds: string[] } | undefined> {
  if (report.writers > 0) return undefined;
  const writerKeyIds = [...new Set((await reader.writers()).map((w) => w.keyId))];
  if (writerKeyIds.length === 0 || writerKeyIds.includes(keyId)) return undefined;
  return { keyId, writerKeyIds };
}
