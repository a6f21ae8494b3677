/**
 * The logging level a 2025-era client session set with `logging/setLevel`, applied by the gateway
 * to the `notifications/message` it relays to that session. A 2026-07-28 upstream has no
 * `logging/setLevel` to forward it to (the gateway's own SDK client refuses to send it in that
 * era), so the gateway answers it itself rather than blame an upstream that never saw it.
 */

/** RFC 5424 severities as MCP names them, least severe first. */
const LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const;

const levels = new WeakMap<object, number>();

/** True when `level` is one of the eight. */
export function isLogLevel(level: unknown): boolean {
  return LEVELS.includes(level as (typeof LEVELS)[number]);
}

/** Records the level a session asked for; false when it is not one of the eight. */
export function setSessionLogLevel(session: object, level: unknown): boolean {
  const rank = LEVELS.indexOf(level as (typeof LEVELS)[number]);
  if (rank < 0) return false;
  levels.set(session, rank);
  return true;
}

/** True when `notification` is a log message below the level its session set (so it is not relayed). */
export function belowSessionLevel(session: object, notification: { method: string; params?: Record<string, unknown> }): boolean {
  if (notification.method !== 'notifications/message') return false;
  const floor = levels.get(session);
  if (floor === undefined) return false;
  const rank = LEVELS.indexOf(notification.params?.level as (typeof LEVELS)[number]);
  return rank >= 0 && rank < floor;
}
