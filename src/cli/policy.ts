/**
 * `tool-envelope policy`: a policy file checked before it is deployed. `check` loads it (schema,
 * `when` conditions type-checked) and runs its own test cases; `explain` tells what it decides for
 * one call and why, through the same decision function the gateway uses.
 */
import { readBoundedText } from '../store/bounded-read.js';
import { resolve } from 'node:path';
import { isToolEnvelopeError, type Issue } from 'tool-envelope/core';
import { checkPolicyDocument, type CompiledPolicy, loadPolicyFile, type PolicyTestCall } from '../governance/policy.js';
import { policyProblemCount } from '../governance/policy-check.js';
import { explainCall, runPolicyTests } from '../governance/policy-explain.js';
import { oneOf, parseVerbArgs, usageError } from './args.js';
import { printable } from '../store/printable.js';
import { EXIT, type CliIo } from './io.js';
import { suggest } from './suggest.js';

export const help = `Usage: tool-envelope policy check FILE
       tool-envelope policy explain FILE --call CALL.json [--format text|json]

check    loads a policy file (.json, .yaml, .yml): its schema, and each rule's \`when\`
         condition parsed and type-checked (problems located by rule, line and column);
         then runs the file's own \`tests:\` cases and reports each that decides otherwise.
explain  what the policy decides for the call in CALL.json (a test case's \`call\`:
         tool, ceiling, mode, args, principalChain, identity, riskTags, now, ...),
         each rule it looked at (its match, its condition's value) and why.

Options:
  --call FILE       the call to explain (JSON)
  --format FORMAT   text (default) or json

Examples:
  printf 'version: 1\\nrules:\\n  - name: outside\\n    match: { tool: write_file }\\n    when: "!within(args.path, \\047/srv/shared\\047)"\\n    effect: deny\\ntests:\\n  - call: { tool: write_file, mode: local_write, args: { path: /srv/shared/../etc/passwd } }\\n    expect: deny\\n' > policy.yaml
  tool-envelope policy check policy.yaml
  echo '{"tool":"write_file","mode":"local_write","args":{"path":"/srv/shared/a.txt"}}' > call.json
  tool-envelope policy explain policy.yaml --call call.json --format json

Exit codes: 0 valid (check: every test case passed), 1 invalid policy or a failed test case,
2 usage or I/O error (a missing file, @bufbuild/cel not installed).`;

const MAX_CALL_BYTES = 1024 * 1024;

function printIssues(io: CliIo, file: string, issues: readonly Issue[] | undefined, message: string, total = issues?.length ?? 0): void {
  if (!issues || issues.length === 0) {
    // The loader's message names the file by its full path: the file is named once, as given.
    const full = resolve(io.cwd, file);
    io.stderr.write(`${file}: ${message.startsWith(`${full}: `) ? message.slice(full.length + 2) : message}\n`);
    return;
  }
  for (const i of issues) io.stderr.write(`${file}${where(i)}: ${i.path || '/'} ${i.message}${nearest(i)}\n`);
  // The loader lists at most POLICY_LIMITS.maxIssues: say that the list stops there.
  if (total > issues.length) io.stderr.write(`${file}: ... and ${total - issues.length} more problems\n`);
}

/** `:LINE:COLUMN` of an issue located in the file (`params.at`), as compilers print it; else nothing. */
function where(i: Issue): string {
  const at = i.params?.at as { line?: unknown; column?: unknown } | undefined;
  return typeof at?.line === 'number' && typeof at.column === 'number' ? `:${at.line}:${at.column}` : '';
}

/** ` (did you mean 'tool'?)` for a key not allowed that is a near miss of one that is. */
function nearest(i: Issue): string {
  const expected = i.params?.expected;
  if (i.code !== 'additionalProperties' || !Array.isArray(expected)) return '';
  const near = suggest(i.path.slice(i.path.lastIndexOf('/') + 1), expected as string[]);
  return near ? ` (did you mean '${near}'?)` : '';
}

/** The compiled policy, or the exit code after reporting why there is none. */
async function load(file: string, io: CliIo): Promise<CompiledPolicy | number> {
  try {
    return await loadPolicyFile(resolve(io.cwd, file));
  } catch (e) {
    if (isToolEnvelopeError(e, 'missing-dependency')) {
      io.stderr.write(`tool-envelope policy: ${e.message}\n`);
      return EXIT.USAGE;
    }
    if (isToolEnvelopeError(e) && !e.message.startsWith('cannot read policy file')) {
      printIssues(io, file, e.issues, e.message, policyProblemCount(e));
      return EXIT.INVALID;
    }
    io.stderr.write(`tool-envelope policy: ${(e as Error)?.message ?? String(e)}\n`);
    return EXIT.USAGE;
  }
}

async function check(file: string, io: CliIo): Promise<number> {
  const policy = await load(file, io);
  if (typeof policy === 'number') return policy;
  const tests = policy.document.tests ?? [];
  const failures = runPolicyTests(policy);
  for (const f of failures) io.stderr.write(`${file}: /tests/${f.index} ${f.name}: expected ${f.expected}, got ${f.actual}: ${f.reason}\n`);
  const rules = policy.document.rules?.length ?? 0;
  io.stdout.write(`${file}: ${rules} rule(s), ${tests.length - failures.length} of ${tests.length} test case(s) passed\n`);
  return failures.length === 0 ? EXIT.OK : EXIT.INVALID;
}

/** The call of a `--call` file, checked as a test case's call is. */
async function readCall(file: string, io: CliIo): Promise<PolicyTestCall | number> {
  const path = resolve(io.cwd, file);
  let text: string;
  try {
    // Bounded whatever the file is: /dev/zero or a FIFO has no size to check first.
    text = await readBoundedText(path, MAX_CALL_BYTES, 'call file');
  } catch (e) {
    if (isToolEnvelopeError(e) && e.code === 'too-large') return usageError('policy', io, `${file} is larger than ${MAX_CALL_BYTES} bytes`);
    return usageError('policy', io, `cannot read ${file}: ${(e as Error).message}`);
  }
  let call: unknown;
  try {
    call = JSON.parse(text);
  } catch (e) {
    return usageError('policy', io, `${file}: not JSON: ${(e as Error).message}`);
  }
  try {
    // Checked by the policy schema's own definition of a test call, so that both say the same.
    checkPolicyDocument({ version: 1, tests: [{ call, expect: 'allow' }] });
  } catch (e) {
    const issues = isToolEnvelopeError(e) ? e.issues : undefined;
    for (const i of issues ?? []) io.stderr.write(`${file}: ${i.path.replace(/^\/tests\/0\/call/, '') || '/'} ${i.message}\n`);
    return EXIT.USAGE;
  }
  return call as PolicyTestCall;
}

async function explain(file: string, callFile: string, format: 'text' | 'json', io: CliIo): Promise<number> {
  const policy = await load(file, io);
  if (typeof policy === 'number') return policy;
  const call = await readCall(callFile, io);
  if (typeof call === 'number') return call;
  let result: ReturnType<typeof explainCall>;
  try {
    result = explainCall(policy, call);
  } catch (e) {
    return usageError('policy', io, `${callFile}: ${(e as Error).message}`);
  }
  const { decision, explanation, gate } = result;
  if (format === 'json') {
    io.stdout.write(
      `${JSON.stringify(
        {
          effect: decision.effect,
          effectiveMode: decision.effectiveMode,
          reason: decision.reason,
          rule: decision.rule ?? null,
          // An allowed call the gateway still blocks: the tool needs a higher mode than the effective one.
          ...(gate !== undefined && { blocked: gate }),
          rules: explanation?.rules ?? [],
          // Named, never counted: only the pipeline counts a call that runs.
          ...(decision.budgets !== undefined && { budgets: decision.budgets }),
        },
        null,
        2,
      )}\n`,
    );
    return EXIT.OK;
  }
  const lines: string[] = [];
  for (const r of explanation?.rules ?? []) {
    const parts: string[] = [];
    if (r.mismatch !== undefined) parts.push(`match.${r.mismatch} does not hold`);
    else parts.push('match holds');
    if (r.when) parts.push(r.when.error !== undefined ? `when errs (${r.when.error})` : `when ${JSON.stringify(r.when.source)} is ${String(r.when.value)}`);
    if (r.unmet !== undefined) parts.push(`requirement unmet: ${r.unmet}`);
    lines.push(`rule ${r.index} ${r.name}: ${parts.join(', ')} => ${r.matched || r.when?.error !== undefined ? 'decides' : 'next'}`);
  }
  if (explanation === undefined) lines.push('no rule consulted: the modes alone decide');
  else if (explanation.deciding === -1) lines.push('no rule matched: the default decides');
  lines.push(
    `decision: ${decision.effect}${decision.effectiveMode ? ` at ${decision.effectiveMode}` : ''} (${decision.rule ?? 'no rule'}): ${decision.reason}`,
  );
  if (gate !== undefined) lines.push(`not run: blocked by the gateway: ${gate}`);
  for (const b of decision.budgets ?? []) lines.push(`counted, when it runs, against ${b.name}`);
  io.stdout.write(`${lines.join('\n')}\n`);
  return EXIT.OK;
}

export async function run(args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'check' && sub !== 'explain') {
    if (sub === undefined) return usageError('policy', io, 'give check or explain');
    const near = suggest(sub, ['check', 'explain']);
    return usageError('policy', io, `unknown sub-verb '${printable(sub.slice(0, 40))}': check or explain${near ? ` (did you mean '${near}'?)` : ''}`);
  }
  const parsed = parseVerbArgs('policy', rest, { call: { type: 'string' }, format: { type: 'string' } }, io);
  if (typeof parsed === 'number') return parsed;
  const [file, ...extra] = parsed.positionals;
  if (file === undefined || extra.length > 0) return usageError('policy', io, 'give exactly one policy FILE');
  if (sub === 'check') {
    if (parsed.values.call !== undefined || parsed.values.format !== undefined) return usageError('policy', io, 'check takes no --call or --format');
    return check(file, io);
  }
  const callFile = parsed.values.call;
  if (typeof callFile !== 'string') return usageError('policy', io, 'explain needs --call CALL.json');
  const format = oneOf('policy', io, '--format', parsed.values.format, ['text', 'json'] as const, 'text');
  if (format === undefined) return EXIT.USAGE;
  return explain(file, callFile, format, io);
}
