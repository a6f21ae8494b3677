/**
 * `tool-envelope audit approvals`: list, approve or reject approval requests. The CLI cannot run the
 * tool: approving only settles the request (one of concurrent deciders wins), and the process that owns
 * the tool (`watchApprovals`) runs it once; `--wait` waits for that outcome. Rejecting records it here.
 */
import type { JsonObject } from 'tool-envelope/core';
import { resolve } from 'node:path';
import { settleRejected } from '../governance/approval-settle.js';
import { approversNeeded } from '../governance/approval-signature.js';
import { signAndApprove } from '../governance/approvals.js';
import { osIdentity } from '../governance/identity.js';
import { isAuthFailure, loadTokenAuthenticator } from '../mcp/serve/auth.js';
import { loadOperatorKey } from '../store/operator-key.js';
import { tenantOfChain } from '../store/tenant.js';
import type { ApprovalRequest, ApprovalState, Store } from '../store/types.js';
import { oneOf, parseVerbArgs, usageError } from './args.js';
import { argsCell } from './args-cell.js';
import { STORE_HELP, STORE_OPTIONS, facts, interruptedExit, positiveInt, printable, printableJson, shortTime, table, withStore } from './audit-common.js';
import { EXIT, type CliIo } from './io.js';
import { suggest, withDidYouMean } from './suggest.js';

/** Help of `audit approvals`. */
export const help = `tool-envelope audit approvals [list] [--state S] [--tool NAME] [--session ID] [--limit N] [--format text|json]
tool-envelope audit approvals show ID [--format text|json]
tool-envelope audit approvals approve ID [--reason TEXT] [--wait SECONDS]
tool-envelope audit approvals reject ID [--reason TEXT]

Paused calls wait for an approver. 'list' shows the pending ones (or --state approved, rejected,
expired, completed, failed). 'approve' releases one: the request becomes 'approved' and the
process that owns the tool (a governed runtime running an approval worker) runs it exactly once
and records its final envelope (completed or failed) in the audit log; with --wait the command
waits for that outcome. 'reject' settles the request as rejected and logs the rejected envelope.
A request past its expiry cannot be approved: it is settled as expired instead. A request whose
policy rule asks for several approvers (approvers: 2) needs that many distinct approvers, none from
the call's own chain: 'approve' records one approval and says how many more the request needs (the
same approver twice counts once), the last one releases the call, one 'reject' ends it; 'list'
shows '1 of 2' in the decided-by column, 'show' and --format json the approvers so far.

The approver is the OS user running the command (user:NAME), never a name typed in: approving
signs the decision with the operator key (TOOL_ENVELOPE_KEY, or the private key file the gateway
created), and the owning process runs only requests whose signatures verify. A request whose
stored call was edited, or a row inserted by hand, cannot be approved. A principal of the call's
own chain may not approve it.

Options:
${STORE_HELP}
  --state S             list requests in this state (default pending)
  --approver NAME       optional check: must be the approver's identity
  --tokens FILE         approve as the identity of the token in TOOL_ENVELOPE_TOKEN, which must
                        have the approver role in FILE (the gateway's --auth tokens file)
  --reason TEXT         why (recorded)
  --wait SECONDS        after approving, wait up to SECONDS for the call's final outcome
  --format F            text (default) or json

Exit codes: 0 done (for approve --wait: the call completed); 1 refused or failed: unknown id,
request not pending, expired, an approver who may not decide it (a principal of the call, a token
without the approver role, --approver naming someone else), the approved call failed, or --wait
timed out; 2 usage, store or I/O error; 130/143 --wait stopped by SIGINT/SIGTERM (the approval
stands).

Examples:
  tool-envelope audit approvals --store ./tool-envelope.db
  tool-envelope audit approvals approve apr_5f0c... --reason "ticket OPS-12" --wait 120
  tool-envelope audit approvals reject apr_5f0c... --reason "wrong repository"
`;

const ACTIONS = ['list', 'show', 'approve', 'reject'];

const STATES: readonly ApprovalState[] = ['pending', 'approved', 'rejected', 'expired', 'completed', 'failed'];

/** Runs `audit approvals`. */
export async function run(args: string[], io: CliIo): Promise<number> {
  const verb = 'audit approvals';
  const p = parseVerbArgs(
    verb,
    args,
    {
      ...STORE_OPTIONS,
      state: { type: 'string' },
      tool: { type: 'string' },
      session: { type: 'string' },
      limit: { type: 'string' },
      format: { type: 'string' },
      approver: { type: 'string' },
      reason: { type: 'string' },
      wait: { type: 'string' },
      tokens: { type: 'string' },
    },
    io,
  );
  if (typeof p === 'number') return p;
  const [action = 'list', id, ...extra] = p.positionals;
  if (extra.length) return usageError(verb, io, `unexpected argument '${extra[0]}'`);
  const format = oneOf(verb, io, 'format', p.values.format, ['text', 'json'] as const, 'text');
  if (format === undefined) return EXIT.USAGE;
  const v = p.values;

  if (action === 'list') {
    if (id !== undefined) return usageError(verb, io, `unexpected argument '${id}'`);
    const state = oneOf(verb, io, 'state', v.state, STATES, 'pending');
    const limit = positiveInt(verb, io, 'limit', v.limit, 100, 10_000);
    if (state === undefined || limit === undefined) return EXIT.USAGE;
    return withStore(verb, v, io, async (store) => {
      const { approvals } = await store.listApprovals({
        state,
        limit,
        ...(typeof v.tool === 'string' && { tool: v.tool }),
        ...(typeof v.session === 'string' && { sessionId: v.session }),
      });
      const quorums = await Promise.all(approvals.map((a) => quorumOf(store, a)));
      if (format === 'json')
        io.stdout.write(
          `${printableJson(
            JSON.stringify(
              approvals.map((a, i) => withQuorum(a, quorums[i])),
              null,
              2,
            ),
          )}\n`,
        );
      else if (approvals.length === 0) io.stdout.write(`No ${state} approval requests.\n`);
      else {
        const rows = approvals.map((a, i) => [
          a.id,
          shortTime(a.createdAt),
          a.tool,
          a.principalChain.map((x) => `${x.kind}:${x.id}`).join('>') || '-',
          a.expiresAt === null ? 'never' : shortTime(a.expiresAt),
          quorumCell(a, quorums[i]),
          argsCell(a.callEnvelope.args ?? {}),
          a.reason,
        ]);
        io.stdout.write(
          table(['id', 'created (UTC)', 'tool', 'principals', 'expires (UTC)', 'decided by', 'args', 'why'], rows, new Set(), p.values.wide === true),
        );
      }
      return EXIT.OK;
    });
  }

  if (action !== 'show' && action !== 'approve' && action !== 'reject') {
    const near = suggest(action, ACTIONS);
    return usageError(verb, io, `unknown action '${printable(action.slice(0, 40))}'${near ? ` (did you mean '${near}'?)` : ''} (${ACTIONS.join(', ')})`);
  }
  if (id === undefined) return usageError(verb, io, `${action} needs an approval ID`);

  if (action === 'show') {
    return withStore(verb, v, io, async (store) => {
      const a = await store.getApproval(id);
      if (!a) return notFound(io, id);
      const quorum = await quorumOf(store, a);
      io.stdout.write(format === 'json' ? `${printableJson(JSON.stringify(withQuorum(a, quorum), null, 2))}\n` : describe(a, quorum));
      return EXIT.OK;
    });
  }

  // Usage first: a malformed command is a usage error whoever runs it.
  const reason = typeof v.reason === 'string' ? v.reason : null;
  let waitMs = 0;
  if (v.wait !== undefined) {
    if (action !== 'approve') return usageError(verb, io, '--wait applies to approve only');
    const s = positiveInt(verb, io, 'wait', v.wait, 0, 86_400);
    if (s === undefined) return EXIT.USAGE;
    waitMs = s * 1000;
  }

  // The approver is who runs this command (the OS user), or the identity of a token with the
  // approver role (TOOL_ENVELOPE_TOKEN, checked against --tokens FILE); never a name typed in.
  let me = osIdentity().principal;
  // A token's tenant bounds what it may decide, as in the console (console/tenancy.ts): another
  // tenant's request is not found. The OS user, who holds the store itself, decides any.
  let sees: (a: ApprovalRequest) => boolean = () => true;
  if (typeof v.tokens === 'string') {
    const token = io.env.TOOL_ENVELOPE_TOKEN;
    if (!token) return usageError(verb, io, '--tokens FILE needs the approver token in the environment variable TOOL_ENVELOPE_TOKEN');
    let who: Awaited<ReturnType<Awaited<ReturnType<typeof loadTokenAuthenticator>>['authenticate']>>;
    try {
      who = await (await loadTokenAuthenticator(resolve(io.cwd, v.tokens))).authenticate(`Bearer ${token}`);
    } catch (e) {
      return usageError(verb, io, withDidYouMean(e));
    }
    if (isAuthFailure(who)) return refused(io, `TOOL_ENVELOPE_TOKEN: ${who.description}`);
    if (!who.roles.includes('approver')) return refused(io, `the token of ${who.principal.kind}:${who.principal.id} does not have the approver role`);
    me = who.principal;
    const tenant = who.principal.tenant_id ?? null;
    if (!who.roles.includes('admin')) sees = (a) => tenantOfChain(a.principalChain) === tenant;
  }
  const approver = `${me.kind}:${me.id}`;
  if (v.approver !== undefined && v.approver !== approver && v.approver !== me.id) {
    return refused(io, `the approver is ${approver} (the OS user, or the identity of TOOL_ENVELOPE_TOKEN); --approver cannot name anyone else`);
  }

  return withStore(verb, v, io, async (store) => {
    const a = await store.getApproval(id);
    if (!a || !sees(a)) return notFound(io, id);
    if (a.state !== 'pending') {
      io.stderr.write(`tool-envelope ${verb}: request ${id} is ${a.state}${a.decidedBy ? ` (decided by ${printable(a.decidedBy)})` : ''}, not pending\n`);
      return EXIT.INVALID;
    }
    const now = Date.now();
    if (a.expiresAt !== null && a.expiresAt <= now) {
      const settled = await settleRejected(store, a, 'expired', null, null, now);
      io.stderr.write(`tool-envelope ${verb}: request ${id} expired at ${shortTime(a.expiresAt)} UTC${settled ? '; settled as expired' : ''}\n`);
      return EXIT.INVALID;
    }
    if (action === 'reject') {
      const settled = await settleRejected(store, a, 'rejected', approver, reason, now);
      if (!settled) return decidedElsewhere(io, id);
      io.stdout.write(`${id}: rejected by ${approver}; ${printable(a.tool)} will not run\n`);
      return EXIT.OK;
    }
    let signed: Awaited<ReturnType<typeof signAndApprove>>;
    try {
      signed = await signAndApprove(store, await loadOperatorKey(), a, { approver, reason }, { now });
    } catch (e) {
      io.stderr.write(`tool-envelope ${verb}: ${(e as Error).message}\n`);
      return (e as { code?: string }).code === 'approval-forbidden' ? EXIT.INVALID : EXIT.USAGE;
    }
    if (signed && 'invalid' in signed) {
      io.stderr.write(`tool-envelope ${verb}: request ${id} cannot be approved: ${signed.invalid}\n`);
      return EXIT.INVALID;
    }
    if (!signed) return decidedElsewhere(io, id);
    if ('waiting' in signed) {
      const { approvers, needed } = signed.waiting;
      const left = needed - approvers.length;
      io.stdout.write(
        `${id}: approval ${approvers.length} of ${needed} recorded (${printable(approvers.join(', '))}); needs ${left} more distinct approver${left === 1 ? '' : 's'}\n`,
      );
      if (waitMs === 0) return EXIT.OK;
    } else io.stdout.write(`${id}: approved by ${approver}; the process that owns ${printable(a.tool)} runs it once\n`);
    if (waitMs === 0) return EXIT.OK;
    const final = await waitForOutcome(store, id, waitMs, io.signal);
    if (!final && io.signal.aborted) {
      io.stderr.write(
        `tool-envelope ${verb}: stopped waiting: the approval of ${id} stands; its call has no outcome yet (the process that owns the tool runs it)\n`,
      );
      return interruptedExit(io.signal);
    }
    if (!final) {
      io.stderr.write(
        `tool-envelope ${verb}: ${id} is approved but no process ran it within ${waitMs / 1000} s (is the owning runtime running its approval worker?)\n`,
      );
      return EXIT.INVALID;
    }
    const o = final.outcome ?? {};
    const err = o.error as JsonObject | undefined;
    const why = err ? ` (${String(err.category)}${err.code ? `/${String(err.code)}` : ''}: ${String(err.detail ?? '')})` : '';
    io.stdout.write(`${id}: ${final.state}${printable(why)}\n`);
    return final.state === 'completed' ? EXIT.OK : EXIT.INVALID;
  });
}

/** A decision refused to this approver: the command was well formed, so exit 1 (README: 2 is for usage and I/O errors). */
function refused(io: CliIo, why: string): number {
  io.stderr.write(`tool-envelope audit approvals: ${why}\n`);
  return EXIT.INVALID;
}

function notFound(io: CliIo, id: string): number {
  io.stderr.write(`tool-envelope audit approvals: no approval request ${JSON.stringify(id)}\n`);
  return EXIT.INVALID;
}

function decidedElsewhere(io: CliIo, id: string): number {
  io.stderr.write(`tool-envelope audit approvals: request ${id} was decided by someone else meanwhile\n`);
  return EXIT.INVALID;
}

/** Who approved a request that needs several approvers, and how many it needs; undefined for one approver. */
async function quorumOf(store: Store, a: ApprovalRequest): Promise<Quorum | undefined> {
  const needed = approversNeeded(a.policyDecision?.approvers);
  if (needed === 1) return undefined;
  return { needed, approvedBy: (await store.approvalVotes.list(a.id)).map((v) => v.approver) };
}

interface Quorum {
  needed: number;
  approvedBy: string[];
}

function withQuorum(a: ApprovalRequest, q: Quorum | undefined): ApprovalRequest & { approvals?: Quorum & { stillNeeded: number } } {
  if (!q) return a;
  return { ...a, approvals: { ...q, stillNeeded: a.state === 'pending' ? Math.max(0, q.needed - q.approvedBy.length) : 0 } };
}

/** The "decided by" cell: for a pending request that needs several approvers, how many it has of how many. */
function quorumCell(a: ApprovalRequest, q: Quorum | undefined): string {
  if (!q || a.state !== 'pending') return (q ? q.approvedBy.join(', ') : a.decidedBy) ?? '';
  return `${q.approvedBy.length} of ${q.needed}${q.approvedBy.length ? `: ${q.approvedBy.join(', ')}` : ''}`;
}

function describe(a: ApprovalRequest, q?: Quorum): string {
  const pairs: [string, string][] = [
    ['id', a.id],
    ['state', a.state],
    ['tool', a.tool],
    ['tool call', a.toolCallId],
    ['run', a.runId],
    ['session', a.sessionId ?? '-'],
    ['principals', a.principalChain.map((x) => `${x.kind}:${x.id}`).join(' → ') || '-'],
    ['why', a.reason],
    ['created', `${shortTime(a.createdAt)} UTC`],
    ['expires', a.expiresAt === null ? 'never' : `${shortTime(a.expiresAt)} UTC`],
  ];
  if (q) {
    const left = Math.max(0, q.needed - q.approvedBy.length);
    pairs.push([
      'approvals',
      `${q.approvedBy.length} of ${q.needed} distinct approvers${q.approvedBy.length ? ` (${q.approvedBy.join(', ')})` : ''}${a.state === 'pending' ? `; needs ${left} more` : ''}`,
    ]);
  }
  const by = q && a.decidedBy?.startsWith('[') ? q.approvedBy.slice(0, q.needed).join(', ') : a.decidedBy;
  if (a.decidedAt !== null) pairs.push(['decided', `${shortTime(a.decidedAt)} UTC by ${by ?? '-'}${a.decisionReason ? `: ${a.decisionReason}` : ''}`]);
  let text = facts(pairs);
  text += `\nCall envelope:\n${printableJson(JSON.stringify(a.callEnvelope, null, 2))}\n`;
  if (a.outcome) text += `\nOutcome:\n${printableJson(JSON.stringify(a.outcome, null, 2))}\n`;
  return text;
}

/** Polls until the request is settled (`completed`/`failed`/`rejected`/`expired`) or time runs out. */
async function waitForOutcome(store: Store, id: string, waitMs: number, signal: AbortSignal): Promise<ApprovalRequest | undefined> {
  const until = Date.now() + waitMs;
  for (;;) {
    const a = await store.getApproval(id);
    if (a && a.state !== 'pending' && a.state !== 'approved') return a;
    if (Date.now() >= until || signal.aborted) return undefined;
    await new Promise((r) => setTimeout(r, 100));
  }
}
