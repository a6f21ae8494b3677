/**
 * Drives the system's headless Chromium (Debian's `chromium`) over the
 * DevTools protocol on a pipe (`--remote-debugging-pipe`: fd 3 in, fd 4 out,
 * NUL-delimited JSON), so tests need no WebSocket library and no browser
 * download. Test support only (excluded from the build).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Readable, Writable } from 'node:stream';
import { locate, missingMessage, prereq } from '../../../scripts/test-prereqs.mjs';

type Message = {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { message: string };
  sessionId?: string;
};

/** One page loaded in a fresh headless Chromium. */
export interface LoadedPage {
  /** Evaluates an expression in the page (DevTools is not subject to the page's CSP) and returns its JSON value. */
  evaluate<T>(expression: string): Promise<T>;
  /** A PNG screenshot of the whole page, or of a clip (CSS pixels). */
  screenshot(clip?: { x: number; y: number; width: number; height: number }): Promise<Buffer>;
  /** URLs the page requested (the document itself included). */
  requests: string[];
  /** Console messages and uncaught exceptions. */
  errors: string[];
  close(): Promise<void>;
}

/** Loads `file` in headless Chromium and waits for its load event. */
export async function loadPage(file: string, options: { width?: number; height?: number; timeoutMs?: number } = {}): Promise<LoadedPage> {
  // Debian's /usr/bin/chromium, or CHROMIUM_PATH (scripts/test-prereqs.mjs).
  const chromium = locate(prereq('chromium'));
  if (!chromium) throw new Error(missingMessage(prereq('chromium')));
  const profile = mkdtempSync(join(tmpdir(), 'te-chromium-'));
  const child: ChildProcess = spawn(
    chromium,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
      '--remote-debugging-pipe',
      `--user-data-dir=${profile}`,
      `--window-size=${options.width ?? 1280},${options.height ?? 900}`,
      'about:blank',
    ],
    { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr = (stderr + c).slice(-4000)));
  const input = child.stdio[3] as Writable;
  const output = child.stdio[4] as Readable;
  const pending = new Map<number, { resolve: (m: Message) => void; reject: (e: Error) => void }>();
  const listeners: ((m: Message) => void)[] = [];
  let nextId = 1;
  let buffer = Buffer.alloc(0);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  output.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (let nul = buffer.indexOf(0); nul !== -1; nul = buffer.indexOf(0)) {
      const msg = JSON.parse(buffer.subarray(0, nul).toString('utf8')) as Message;
      buffer = buffer.subarray(nul + 1);
      if (msg.id !== undefined && pending.has(msg.id)) {
        const p = pending.get(msg.id)!;
        pending.delete(msg.id);
        if (msg.error) p.reject(new Error(`CDP: ${msg.error.message}`));
        else p.resolve(msg);
      } else for (const l of listeners) l(msg);
    }
  });
  child.once('exit', (code) => {
    for (const p of pending.values()) p.reject(new Error(`chromium exited (${code}): ${stderr}`));
    pending.clear();
  });
  const send = (method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve: (m) => resolve(m.result ?? {}), reject });
      input.write(JSON.stringify({ id, method, params, ...(sessionId && { sessionId }) }) + '\0');
    });
  const timeout = options.timeoutMs ?? 60_000;
  const withTimeout = <T>(p: Promise<T>, what: string): Promise<T> =>
    Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`chromium: ${what} timed out; stderr: ${stderr}`)), timeout).unref())]);

  const close = async (): Promise<void> => {
    try {
      await Promise.race([send('Browser.close'), exited]);
    } catch {
      // Already gone.
    }
    child.kill('SIGKILL');
    await exited;
    try {
      // Chromium's helper processes may still be writing the profile for a moment after the browser exits.
      rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    } catch {
      // A leftover temp profile is not worth failing a test for.
    }
  };

  try {
    const { targetInfos } = (await withTimeout(send('Target.getTargets'), 'getTargets')) as { targetInfos: { targetId: string; type: string }[] };
    const page = targetInfos.find((t) => t.type === 'page');
    if (!page) throw new Error('no page target');
    const { sessionId } = (await send('Target.attachToTarget', { targetId: page.targetId, flatten: true })) as { sessionId: string };
    const requests: string[] = [];
    const errors: string[] = [];
    let loaded: () => void = () => {};
    const loadFired = new Promise<void>((r) => (loaded = r));
    listeners.push((m) => {
      if (m.sessionId !== sessionId) return;
      if (m.method === 'Network.requestWillBeSent') requests.push(String((m.params?.request as { url: string } | undefined)?.url));
      if (m.method === 'Page.loadEventFired') loaded();
      if (m.method === 'Runtime.exceptionThrown') errors.push(JSON.stringify(m.params));
      if (m.method === 'Runtime.consoleAPICalled' && m.params?.type === 'error') errors.push(JSON.stringify(m.params.args));
    });
    await send('Page.enable', {}, sessionId);
    await send('Network.enable', {}, sessionId);
    await send('Runtime.enable', {}, sessionId);
    await send('Page.navigate', { url: pathToFileURL(file).href }, sessionId);
    await withTimeout(loadFired, 'page load');
    return {
      requests,
      errors,
      async evaluate<T>(expression: string): Promise<T> {
        const r = (await withTimeout(send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true }, sessionId), 'evaluate')) as {
          result: { value: T };
          exceptionDetails?: unknown;
        };
        if (r.exceptionDetails) throw new Error(`evaluate threw: ${JSON.stringify(r.exceptionDetails)}`);
        return r.result.value;
      },
      async screenshot(clip): Promise<Buffer> {
        const params = { format: 'png', captureBeyondViewport: true, ...(clip && { clip: { ...clip, scale: 1 } }) };
        const r = (await withTimeout(send('Page.captureScreenshot', params, sessionId), 'screenshot')) as { data: string };
        return Buffer.from(r.data, 'base64');
      },
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}
