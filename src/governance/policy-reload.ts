/**
 * Reloading a policy file without a restart: on a change of the file (watched through its folder,
 * so that an editor's save by rename is seen too, with a debounce) or when asked (SIGHUP), the file
 * is loaded and checked like `tool-envelope policy check` (schema, conditions, its own test cases);
 * a policy that passes is put in force whole, one that does not is refused with its errors and the
 * policy in force stays (reported once: the same text read again, by the watch and then a SIGHUP say,
 * is refused in silence). Reloads run one at a time; a change during one is read after it.
 */
import { createHash } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import { ToolEnvelopeError } from 'tool-envelope/core';
import { assertPolicyTests } from './policy-explain.js';
import { parsePolicy, policyFormat, readPolicyText } from './policy-load.js';
import type { CompiledPolicy } from './policy-types.js';

export interface PolicyReloadOptions {
  file: string;
  /** Puts a checked policy in force; throwing refuses it (a change the running gateway cannot take). */
  apply(policy: CompiledPolicy): void;
  /** A policy put in force (its digest and the one it replaced). */
  onApplied?(policy: CompiledPolicy, previousDigest: string): void;
  /** A policy refused: the error (with its located issues, when the document is bad); once per text of the file, not again while it stays the same. */
  onRefused?(error: ToolEnvelopeError): void;
  /** How long the file must stay unchanged before it is read; default 200 ms. */
  debounceMs?: number;
  /** Watch the file for changes; default true (`false`: only {@link PolicyReloader.reload}). */
  watch?: boolean;
}

/**
 * What one reload did: `applied` (a new policy in force), `unchanged` (the same document as the
 * one in force), `refused` (the old one stays).
 */
export type PolicyReloadResult = 'applied' | 'unchanged' | 'refused';

/** Reloads one policy file on change or on request. */
export class PolicyReloader {
  private current: CompiledPolicy;
  private readonly watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<PolicyReloadResult> | undefined;
  private again = false;
  private closed = false;
  /** What the last refusal was of (the text's digest, or the read error): the same again is not reported again. */
  private refusedWhat: string | undefined;

  constructor(
    private readonly options: PolicyReloadOptions,
    current: CompiledPolicy,
  ) {
    this.current = current;
    if (options.watch !== false) {
      const name = basename(options.file);
      // The folder, not the file: a save that replaces the file (rename) would end a watch on the file itself.
      this.watcher = watch(dirname(options.file), { persistent: false }, (_event, changed) => {
        if (changed === null || changed === name) this.schedule();
      });
      this.watcher.on('error', () => undefined);
    }
  }

  /** The policy in force (the last one applied). */
  get policy(): CompiledPolicy {
    return this.current;
  }

  /** Reads the file again once it has stopped changing for `debounceMs`. */
  private schedule(): void {
    if (this.closed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.reload(), this.options.debounceMs ?? 200);
    this.timer.unref?.();
  }

  /**
   * Loads, checks and applies the file now; a reload asked for while one runs runs once after it
   * (the file may have changed again meanwhile) and shares its answer. Never throws.
   */
  reload(): Promise<PolicyReloadResult> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    const run = async (): Promise<PolicyReloadResult> => {
      let result: PolicyReloadResult;
      let applied = false;
      do {
        this.again = false;
        result = await this.once();
        applied ||= result === 'applied';
      } while (this.again && !this.closed);
      // A policy put in force on the way stays the answer, whatever the read after it found.
      return applied ? 'applied' : result;
    };
    this.running = run().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async once(): Promise<PolicyReloadResult> {
    let next: CompiledPolicy;
    let what: string | undefined;
    try {
      const { file } = this.options;
      const text = await readPolicyText(file);
      what = createHash('sha256').update(text).digest('hex');
      next = parsePolicy(text, policyFormat(file), file);
      assertPolicyTests(next, file);
      if (next.digest === this.current.digest) {
        this.refusedWhat = undefined;
        return 'unchanged';
      }
      if (this.closed) return 'refused';
      this.options.apply(next);
    } catch (e) {
      const err = e instanceof ToolEnvelopeError ? e : new ToolEnvelopeError('invalid-option', (e as Error)?.message ?? String(e), { cause: e });
      // One report per change: a save seen by the watch and a SIGHUP after it read the same text.
      what ??= `${err.code}: ${err.message}`;
      if (what !== this.refusedWhat) this.options.onRefused?.(err);
      this.refusedWhat = what;
      return 'refused';
    }
    this.refusedWhat = undefined;
    const previous = this.current.digest;
    this.current = next;
    this.options.onApplied?.(next, previous);
    return 'applied';
  }

  /** Stops watching; a reload in progress finishes without applying. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.watcher?.close();
  }
}
