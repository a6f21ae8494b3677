/**
 * The operator key: one secret the operator holds, used to sign what must not be forged
 * (approval decisions, audit-chain checkpoints). HMAC-SHA-256 over caller-chosen bytes.
 *
 * Where the key comes from, first match wins:
 * 1. `options.secret` (tests, embedding applications);
 * 2. the environment variable `TOOL_ENVELOPE_KEY` (base64, base64url or hex, at least 32 bytes);
 * 3. the file `options.file`, else `TOOL_ENVELOPE_KEY_FILE`, else
 *    `$XDG_CONFIG_HOME/tool-envelope/operator.key` (`~/.config/...`).
 *
 * A key file must be private (no group or other permission bits): a looser one is refused with
 * `insecure-key-file`, since anyone who can read it can forge approvals. With `create: true` a
 * missing file is created with a fresh random key, mode 0600 (its folder 0700).
 */
import { createHash, createHmac, createSecretKey, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';
import { chmod, link, mkdir, open, readFile, stat, unlink } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { ToolEnvelopeError } from 'tool-envelope/core';

/** A loaded operator key. The secret itself is never exposed; only signing and verifying. */
export interface OperatorKey {
  /** A short, non-secret name for the key (first 16 hex digits of SHA-256 of the key). */
  readonly id: string;
  /** Where the key came from: `option`, `env` or the file path. */
  readonly source: string;
  /** HMAC-SHA-256 of `data`, base64url. */
  sign(data: string | Uint8Array): string;
  /** Constant-time check of a signature made by {@link OperatorKey.sign}. */
  verify(data: string | Uint8Array, signature: string): boolean;
  /**
   * A key for one purpose, derived from this one (HMAC of the purpose), as a `KeyObject` that can
   * be handed to a worker thread without exposing the operator key itself.
   */
  derive(purpose: string): KeyObject;
}

export interface OperatorKeyOptions {
  /** The key bytes themselves (at least 32). */
  secret?: Uint8Array | string;
  /** The key file's path. */
  file?: string;
  /** Create the file with a fresh key when it does not exist. Default `false`. */
  create?: boolean;
  /** Environment to read `TOOL_ENVELOPE_KEY` / `TOOL_ENVELOPE_KEY_FILE` from. Default `process.env`. */
  env?: Record<string, string | undefined>;
}

const MIN_KEY_BYTES = 32;

/** The default key file: `$XDG_CONFIG_HOME/tool-envelope/operator.key`, else `~/.config/tool-envelope/operator.key`. */
export function defaultOperatorKeyFile(env: Record<string, string | undefined> = process.env): string {
  const base = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.trim() !== '' ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'tool-envelope', 'operator.key');
}

function decodeSecret(text: string, where: string): Buffer {
  const t = text.trim();
  let bytes: Buffer;
  if (/^[0-9a-fA-F]+$/.test(t) && t.length % 2 === 0) bytes = Buffer.from(t, 'hex');
  else if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(t)) bytes = Buffer.from(t.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  else throw new ToolEnvelopeError('invalid-option', `the operator key in ${where} is not hex or base64`);
  if (bytes.length < MIN_KEY_BYTES) {
    throw new ToolEnvelopeError('invalid-option', `the operator key in ${where} has ${bytes.length} bytes; at least ${MIN_KEY_BYTES} are needed`);
  }
  return bytes;
}

/** An {@link OperatorKey} over the given secret bytes (at least 32). */
export function operatorKeyFromSecret(secret: Uint8Array | string, source = 'option'): OperatorKey {
  const bytes = typeof secret === 'string' ? decodeSecret(secret, source) : Buffer.from(secret);
  if (bytes.length < MIN_KEY_BYTES) {
    throw new ToolEnvelopeError('invalid-option', `an operator key needs at least ${MIN_KEY_BYTES} bytes (got ${bytes.length})`);
  }
  const id = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
  const sign = (data: string | Uint8Array): string => createHmac('sha256', bytes).update(data).digest('base64url');
  return Object.freeze({
    id,
    source,
    sign,
    derive: (purpose: string): KeyObject => createSecretKey(createHmac('sha256', bytes).update(`tool-envelope/derive:${purpose}`).digest()),
    verify(data: string | Uint8Array, signature: string): boolean {
      if (typeof signature !== 'string') return false;
      const want = Buffer.from(sign(data));
      const got = Buffer.from(signature);
      return want.length === got.length && timingSafeEqual(want, got);
    },
  });
}

/**
 * Loads the operator key (see the module comment for where it is looked for).
 * Throws `ToolEnvelopeError` `insecure-key-file` for a key file readable by group or others,
 * `invalid-option` for a malformed or short key or a missing file without `create`.
 *
 * @example
 * ```ts
 * const key = await loadOperatorKey({ file: './operator.key', create: true });
 * ```
 */
export async function loadOperatorKey(options: OperatorKeyOptions = {}): Promise<OperatorKey> {
  if (options.secret !== undefined) return operatorKeyFromSecret(options.secret, 'option');
  const env = options.env ?? process.env;
  const fromEnv = env.TOOL_ENVELOPE_KEY;
  if (fromEnv !== undefined && fromEnv.trim() !== '') return operatorKeyFromSecret(decodeSecret(fromEnv, 'TOOL_ENVELOPE_KEY'), 'env');
  const file =
    options.file ?? (env.TOOL_ENVELOPE_KEY_FILE && env.TOOL_ENVELOPE_KEY_FILE.trim() !== '' ? env.TOOL_ENVELOPE_KEY_FILE : defaultOperatorKeyFile(env));
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new ToolEnvelopeError('invalid-option', `cannot read the operator key file ${file}: ${(error as Error).message}`);
    if (!options.create)
      throw new ToolEnvelopeError('invalid-option', `no operator key at ${file} (set TOOL_ENVELOPE_KEY or TOOL_ENVELOPE_KEY_FILE, or create one)`);
    return createKeyFile(file);
  }
  if (process.platform !== 'win32' && (info.mode & 0o077) !== 0) {
    throw new ToolEnvelopeError(
      'insecure-key-file',
      `the operator key file ${file} has mode ${(info.mode & 0o777).toString(8)}; it must not be readable by group or others (chmod 600 ${file})`,
    );
  }
  return operatorKeyFromSecret(decodeSecret(await readFile(file, 'utf8'), file), file);
}

async function createKeyFile(file: string): Promise<OperatorKey> {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const secret = randomBytes(MIN_KEY_BYTES);
  // Written whole under a private temporary name, then linked into place: a process that
  // races us sees either no file or a complete one, and the first link wins.
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const handle = await open(tmp, 'wx', 0o600);
  try {
    await handle.writeFile(`${secret.toString('base64url')}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await chmod(tmp, 0o600);
    await link(tmp, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return loadOperatorKey({ file });
    throw new ToolEnvelopeError('invalid-option', `cannot create the operator key file ${file}: ${(error as Error).message}`);
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
  return operatorKeyFromSecret(secret, file);
}
