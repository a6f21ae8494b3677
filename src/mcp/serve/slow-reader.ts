/**
 * What the gateway holds for a client that does not read: its answers and its requests, always,
 * and notifications only while fewer than {@link MAX_UNSENT_NOTIFICATION_BYTES} wait to be sent
 * on that stream. Past that, notifications (progress, log messages, list changes) are dropped:
 * they say how things stand, and a later one says it again. Unbounded, a client that stopped
 * reading while its upstream kept sending progress grew the gateway's memory without end (300 000
 * progress notifications of 280 bytes: 1.3 GB on stdio, 195 MB more on HTTP). Used by the stdio
 * serving transport (serve/stdio.ts) and the HTTP session transport (serve/http-session.ts).
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/client';

/** Bytes a stream to a client may hold unsent before notifications to it are dropped. */
export const MAX_UNSENT_NOTIFICATION_BYTES = 4 * 1024 * 1024;

/** Whether a message is a notification (a method and no id): what may be dropped. */
export function isNotification(message: JSONRPCMessage): boolean {
  return !('id' in message);
}

/** The error reported (once per transport) when the first notification is dropped. */
export function slowReaderError(): Error {
  return new Error(`the client is not reading: notifications are dropped while over ${MAX_UNSENT_NOTIFICATION_BYTES} bytes wait to be sent to it`);
}
