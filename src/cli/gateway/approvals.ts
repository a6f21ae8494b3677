/**
 * The `gateway` verb's approval flags (`--notify URL`, `--console-url URL`, `--approval-run-window
 * MS`) and their wiring: every approval event this gateway sees becomes one `info` line of the
 * operator log with stable fields, and, with webhooks configured (`--notify`, the config file's
 * `notify:`), a notification from the bounded delivery queue.
 */
import type { ApprovalEvent, ApprovalEventSink } from '../../governance/approval-events.js';
import { Notifier } from '../../governance/notify/notifier.js';
import { checkNotifyUrl, loadNotifyTargets, type NotifyTarget } from '../../governance/notify/notify-target.js';
import type { GatewayLogger } from '../../observe/logger.js';
import { MAX_TIMER_MS } from './timer-limit.js';

/** The flags' parseArgs options. */
export const NOTIFY_FLAG_OPTIONS = {
  notify: { type: 'string', multiple: true },
  'console-url': { type: 'string' },
  'approval-run-window': { type: 'string' },
  'approval-wait': { type: 'string' },
} as const;

/** The flags' lines of the gateway's help. */
export const NOTIFY_FLAG_HELP = `  --approval-wait MS            hold a paused call open up to MS for its decision, with progress
                                notifications; a client may ask for less in _meta (default 0)
  --approval-run-window MS      an approved request runs only this long after its decision; found
                                later (no gateway ran it), it expires (default 900000)
  --notify URL                  POST approval events (requested, approved, rejected, expired, run)
                                as JSON to URL (repeatable; the config file's notify: adds formats
                                and signing secrets, see docs/governance.md)
  --console-url URL             the console's base URL, for the notifications' links
`;

/** `--approval-wait` (else the config file's `approvalWaitMs`): ms, or a usage error. */
export function approvalWaitFlag(values: Record<string, unknown>, configured: number | undefined): number | undefined | string {
  const wait = values['approval-wait'];
  // Both wait on a timer, which cannot wait longer than 2^31-1 ms (a longer one fires at once).
  if (typeof wait !== 'string') {
    if (configured !== undefined && configured > MAX_TIMER_MS) return `the config file's approvalWaitMs must be at most ${MAX_TIMER_MS} ms, got ${configured}`;
    return configured;
  }
  if (!/^\d+$/.test(wait) || !Number.isSafeInteger(Number(wait))) return `--approval-wait must be a non-negative integer, got '${wait}'`;
  if (Number(wait) > MAX_TIMER_MS) return `--approval-wait must be at most ${MAX_TIMER_MS} ms (about 24.8 days), got '${wait}'`;
  return Number(wait);
}

/** What the verb plugs in. */
export interface ApprovalWiring {
  onApprovalEvent: ApprovalEventSink;
  /** `undefined`: the default window. */
  runWindowMs: number | undefined;
  /** Delivers what is queued (up to a grace period) and stops. */
  close(): Promise<void>;
}

/**
 * Reads the flags and the config file's targets, loads the secrets (once) and starts the queue; a
 * string is a usage error.
 */
export async function approvalWiring(
  values: Record<string, unknown>,
  configured: readonly NotifyTarget[] | undefined,
  event: GatewayLogger['event'],
): Promise<ApprovalWiring | string> {
  const window = values['approval-run-window'];
  let runWindowMs: number | undefined;
  if (typeof window === 'string') {
    if (!/^\d+$/.test(window) || !Number.isSafeInteger(Number(window)) || Number(window) === 0)
      return `--approval-run-window must be a positive integer, got '${window}'`;
    runWindowMs = Number(window);
  }
  let consoleUrl: string | undefined;
  const targets: NotifyTarget[] = [...(configured ?? [])];
  try {
    if (typeof values['console-url'] === 'string') consoleUrl = checkNotifyUrl(values['console-url'], '--console-url');
    for (const url of (values.notify as string[] | undefined) ?? []) targets.push({ url: checkNotifyUrl(url, '--notify'), format: 'json' });
  } catch (e) {
    return (e as Error).message;
  }
  let notifier: Notifier | undefined;
  if (targets.length > 0) {
    try {
      notifier = new Notifier(await loadNotifyTargets(targets), {
        log: (level, msg, fields) => event(level, 'notify', msg, fields),
        ...(consoleUrl !== undefined && { consoleUrl }),
      });
    } catch (e) {
      return (e as Error).message;
    }
  }
  return {
    onApprovalEvent(e) {
      event('info', 'approvals', `approval ${e.event}`, logFields(e));
      notifier?.send(e);
    },
    runWindowMs,
    close: () => notifier?.close() ?? Promise.resolve(),
  };
}

/** An event's log fields: who, what, which rule and when; never the arguments. */
function logFields(e: ApprovalEvent): Record<string, string | number | null> {
  const head = e.principalChain[0];
  return {
    event: e.event,
    approvalId: e.approvalId,
    tool: e.tool,
    principal: head ? `${head.kind}:${head.id}` : null,
    rule: e.rule,
    decidedBy: e.decidedBy,
    status: e.status,
    expiresAt: e.expiresAt === null ? null : new Date(e.expiresAt).toISOString(),
  };
}
