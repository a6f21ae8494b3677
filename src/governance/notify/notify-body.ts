/**
 * The body of an approval notification: JSON for any receiver, or a Slack-compatible message
 * (`text` plus `blocks`, what an incoming webhook takes). Built from the event alone, whose
 * arguments are already redacted as the audit log stores them.
 */
import { createHmac } from 'node:crypto';
import type { ApprovalEvent } from '../approval-events.js';
import type { NotifyFormat } from './notify-target.js';

/** The most characters of the arguments a Slack message shows (a section's text has a limit). */
const SLACK_ARGS_CHARS = 1500;

/**
 * The link to a request on the console (`--console-url`, the console's base such as
 * `https://gw.example/console`): its card on the inbox, where it is decided.
 */
export function approvalLink(consoleUrl: string | undefined, approvalId: string): string | null {
  if (consoleUrl === undefined) return null;
  return `${consoleUrl.replace(/\/+$/, '')}/inbox#${encodeURIComponent(approvalId)}`;
}

/** The notification body for an event, as the exact text that is sent (and signed). */
export function notificationBody(e: ApprovalEvent, format: NotifyFormat, consoleUrl: string | undefined, deliveryId: string): string {
  const link = approvalLink(consoleUrl, e.approvalId);
  if (format === 'slack') return JSON.stringify(slackMessage(e, link));
  return JSON.stringify({
    event: `approval.${e.event}`,
    deliveryId,
    approvalId: e.approvalId,
    tool: e.tool,
    principalChain: e.principalChain,
    args: e.args,
    rule: e.rule,
    reason: e.reason,
    expiresAt: e.expiresAt === null ? null : new Date(e.expiresAt).toISOString(),
    decidedBy: e.decidedBy,
    status: e.status,
    at: new Date(e.at).toISOString(),
    link,
  });
}

/** `sha256=<hex>`: the HMAC-SHA256 of the exact body bytes, for `X-Tool-Envelope-Signature`. */
export function signBody(secret: Buffer, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;
}

const HEADLINE: Record<ApprovalEvent['event'], string> = {
  requested: 'Approval requested',
  approved: 'Approved',
  rejected: 'Rejected',
  expired: 'Expired',
  run: 'Ran after approval',
};

/** Slack's mrkdwn treats `&`, `<` and `>` as markup: every value from the call is escaped. */
function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function slackMessage(e: ApprovalEvent, link: string | null): { text: string; blocks: unknown[] } {
  const who = e.principalChain.map((p) => `${p.kind}:${p.id}`).join(' → ') || 'nobody';
  const what = `${HEADLINE[e.event]}: ${e.tool} for ${who} (${e.approvalId})`;
  const facts = [
    `*Why:* ${esc(e.rule !== null ? `rule ${e.rule}: ${e.reason}` : e.reason)}`,
    ...(e.decidedBy !== null ? [`*Decided by:* ${esc(e.decidedBy)}`] : []),
    ...(e.status !== null ? [`*Status:* ${esc(e.status)}`] : []),
    ...(e.expiresAt !== null && e.event === 'requested' ? [`*Expires:* ${new Date(e.expiresAt).toISOString()}`] : []),
  ];
  let args = JSON.stringify(e.args, null, 2);
  if (args.length > SLACK_ARGS_CHARS) args = `${args.slice(0, SLACK_ARGS_CHARS)}…`;
  const blocks: unknown[] = [
    { type: 'section', text: { type: 'mrkdwn', text: `*${esc(what)}*\n${facts.join('\n')}` } },
    // Backticks in the arguments would end the code block early: shown as a look-alike.
    { type: 'section', text: { type: 'mrkdwn', text: `*Arguments (as logged):*\n\`\`\`${esc(args.replace(/`/g, 'ˋ'))}\`\`\`` } },
  ];
  if (link !== null)
    blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: `<${link.replace(/[|<>]/g, encodeURIComponent)}|Open in the console>` }] });
  return { text: esc(what), blocks };
}
