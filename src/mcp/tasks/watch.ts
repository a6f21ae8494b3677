/**
 * Watching a task to its end on the gateway's side, whoever polls it: the gateway records a task's
 * end in its audit log even when the caller never asks again. The watch polls the upstream at its
 * `pollIntervalMs` (clamped) until the task is completed, failed or cancelled, the upstream no longer
 * knows it, or its handle expires; an end a caller's `tasks/get` sees first settles it at once.
 */
import type { JsonObject } from 'tool-envelope/core';
import type { TaskDispatch } from './dispatch.js';

/** How a task ended, as the gateway records it. */
export type TaskEnd =
  | { status: 'completed'; result: JsonObject }
  | { status: 'failed'; error: { code: number; message: string } }
  | { status: 'cancelled'; message?: string }
  | { status: 'expired' }
  | { status: 'lost'; message: string };

export interface TaskWatchOptions {
  /** The task's upstream, looked up at each poll (a reconnect replaces it; undefined while it is down). */
  upstream: () => { dispatch: TaskDispatch } | undefined;
  taskId: string;
  /** When the handle expires (ms since the epoch): the watch ends there as `expired`. */
  until: number;
  pollMinMs: number;
  pollMaxMs: number;
  requestTimeoutMs: number;
  now: () => number;
  /** Aborted when the gateway closes: the watch then ends with no end (the call's record stays open). */
  signal: AbortSignal;
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** The end of a task's `tasks/get` answer, or undefined while it runs. */
export function endOfTask(task: JsonObject): TaskEnd | undefined {
  if (!TERMINAL.has(String(task.status))) return undefined;
  if (task.status === 'completed') {
    return isObject(task.result)
      ? { status: 'completed', result: task.result }
      : { status: 'lost', message: 'the upstream reported the task completed without a result' };
  }
  if (task.status === 'failed') {
    const e = isObject(task.error) ? task.error : {};
    return {
      status: 'failed',
      error: { code: typeof e.code === 'number' ? e.code : -32603, message: typeof e.message === 'string' ? e.message : 'the task failed' },
    };
  }
  return typeof task.statusMessage === 'string' ? { status: 'cancelled', message: task.statusMessage.slice(0, 200) } : { status: 'cancelled' };
}

/**
 * Watches one task: `ended` resolves with its end (undefined when the gateway closed first);
 * `seen` settles it with an end observed elsewhere (a caller's `tasks/get`; undefined: stop, the
 * end is recorded elsewhere) and says whether it did (false: the watch had already ended).
 */
export function watchTask(o: TaskWatchOptions): { ended: Promise<TaskEnd | undefined>; seen: (end: TaskEnd | undefined) => boolean } {
  let settle!: (end: TaskEnd | undefined) => boolean;
  let settled = false;
  const ended = new Promise<TaskEnd | undefined>((resolve) => {
    settle = (end) => {
      if (settled) return false;
      settled = true;
      resolve(end);
      return true;
    };
  });
  let interval = o.pollMinMs;
  const loop = async (): Promise<void> => {
    while (!settled) {
      if (o.signal.aborted) return void settle(undefined);
      const left = o.until - o.now();
      if (left <= 0) return void settle({ status: 'expired' });
      await sleep(Math.min(interval, left), o.signal);
      if (settled || o.signal.aborted) continue;
      const up = o.upstream();
      // Down (restarting): asked again at the next interval, until the handle expires.
      if (!up) continue;
      const answer = await up.dispatch.request(
        'tasks/get',
        { taskId: o.taskId, _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } } },
        { timeoutMs: o.requestTimeoutMs, signal: o.signal },
      );
      if (answer.error) {
        // -32602: the upstream no longer knows the task (restarted, purged); other errors are retried.
        if (answer.error.code === -32602) settle({ status: 'lost', message: `the upstream no longer knows the task: ${answer.error.message.slice(0, 200)}` });
        continue;
      }
      const end = endOfTask(answer.result);
      if (end) return void settle(end);
      const asked = answer.result.pollIntervalMs;
      interval = Math.min(o.pollMaxMs, Math.max(o.pollMinMs, typeof asked === 'number' ? asked : o.pollMinMs));
    }
  };
  void loop().catch(() => settle(undefined));
  return { ended, seen: (end) => settle(end) };
}

function isObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
