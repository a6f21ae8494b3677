/**
 * Liberal in what the gateway accepts: a 2026-07-28 upstream's result without `resultType` (the
 * revision requires it; some servers built on the SDK v2 leave it out of stateless answers, and
 * answer the same call correctly over a 2025 session) is read as `complete`, with a warning in the
 * log, instead of failing every call with the SDK's `missing required resultType`. The spec's
 * `strict` keeps the refusal. What the gateway sends its clients always carries `resultType`: the
 * SDK's server writes it on every modern answer.
 */
import type { Transport } from '@modelcontextprotocol/client';

/**
 * Puts `resultType: 'complete'` on a modern upstream's results that have none, ahead of the SDK's
 * decoding; `warn` is called once per connection, with the first such request's id. Call after `connect`.
 */
export function acceptMissingResultType(transport: Transport, modern: () => boolean, warn: (line: string) => void): void {
  const next = transport.onmessage;
  let warned = false;
  transport.onmessage = (message, extra) => {
    if ('result' in message && 'id' in message && !('method' in message)) {
      const result = message.result as Record<string, unknown> | null;
      if (result !== null && typeof result === 'object' && !Array.isArray(result) && result.resultType === undefined && modern()) {
        result.resultType = 'complete';
        if (!warned) {
          warned = true;
          warn(
            `answered request ${JSON.stringify(message.id)} without the resultType 2026-07-28 requires; read as 'complete' (further ones are not logged; --strict-upstream refuses them)`,
          );
        }
      }
    }
    next?.(message, extra);
  };
}
