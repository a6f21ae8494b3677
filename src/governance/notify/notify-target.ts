/**
 * Where approval notifications go: a webhook URL, its body format (`json` or `slack`) and,
 * optionally, the file of the secret its bodies are signed with. Parsed from the gateway config
 * file's `notify:` list or `--notify URL`; the secret file is read once, at start, and refused when
 * group or others may read it (as the operator key file is).
 */
import { stat, readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { ToolEnvelopeError, isJsonObject } from 'tool-envelope/core';

/** The body formats. */
export const NOTIFY_FORMATS = ['json', 'slack'] as const;
export type NotifyFormat = (typeof NOTIFY_FORMATS)[number];

/** One notification target as configured. */
export interface NotifyTarget {
  url: string;
  format: NotifyFormat;
  /** The file holding the HMAC secret (absolute). */
  secretFile?: string;
}

/** A target with its secret read. */
export interface LoadedNotifyTarget {
  url: string;
  format: NotifyFormat;
  secret?: Buffer;
}

/** The longest secret file read: a secret is a line, not a document. */
const MAX_SECRET_BYTES = 4096;

/** A webhook URL, checked: http or https, parseable. Throws `invalid-option` naming `where`. */
export function checkNotifyUrl(value: unknown, where: string): string {
  if (typeof value !== 'string' || value === '') throw new ToolEnvelopeError('invalid-option', `${where}: must be an http(s) URL`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ToolEnvelopeError('invalid-option', `${where}: '${value}' is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ToolEnvelopeError('invalid-option', `${where}: must be an http(s) URL, got ${url.protocol}`);
  return value;
}

/**
 * The config file's `notify:` list: entries `{ url, format?: json|slack, secretFile? }`, the secret
 * file resolved against `baseDir`. Throws `invalid-option` naming the bad entry.
 */
export function parseNotifyTargets(value: unknown, baseDir: string, where: string): NotifyTarget[] {
  if (!Array.isArray(value)) throw new ToolEnvelopeError('invalid-option', `${where}: must be a list of { url, format, secretFile }`);
  return value.map((entry, i): NotifyTarget => {
    const at = `${where}[${i}]`;
    if (!isJsonObject(entry)) throw new ToolEnvelopeError('invalid-option', `${at}: must be an object { url, format, secretFile }`);
    for (const k of Object.keys(entry))
      if (k !== 'url' && k !== 'format' && k !== 'secretFile')
        throw new ToolEnvelopeError('invalid-option', `${at}.${k}: unknown setting (url, format, secretFile)`);
    const format = entry.format ?? 'json';
    if (!(NOTIFY_FORMATS as readonly unknown[]).includes(format)) throw new ToolEnvelopeError('invalid-option', `${at}.format: must be json or slack`);
    const target: NotifyTarget = { url: checkNotifyUrl(entry.url, `${at}.url`), format: format as NotifyFormat };
    if (entry.secretFile !== undefined) {
      if (typeof entry.secretFile !== 'string' || entry.secretFile === '') throw new ToolEnvelopeError('invalid-option', `${at}.secretFile: must be a path`);
      target.secretFile = resolve(baseDir, entry.secretFile);
    }
    return target;
  });
}

/**
 * Reads each target's secret file once: refused (`insecure-key-file`) when group or others may read
 * it, empty, or longer than a secret; the secret is the file's text without surrounding whitespace.
 */
export async function loadNotifyTargets(targets: readonly NotifyTarget[]): Promise<LoadedNotifyTarget[]> {
  const out: LoadedNotifyTarget[] = [];
  for (const t of targets) {
    const loaded: LoadedNotifyTarget = { url: t.url, format: t.format };
    if (t.secretFile !== undefined) loaded.secret = await readSecret(t.secretFile);
    out.push(loaded);
  }
  return out;
}

async function readSecret(file: string): Promise<Buffer> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(file);
  } catch (e) {
    throw new ToolEnvelopeError('invalid-option', `cannot read the notify secret file ${file}: ${(e as Error).message}`);
  }
  if (process.platform !== 'win32' && (info.mode & 0o077) !== 0) {
    throw new ToolEnvelopeError(
      'insecure-key-file',
      `the notify secret file ${file} has mode ${(info.mode & 0o777).toString(8)}; it must not be readable by group or others (chmod 600 ${file})`,
    );
  }
  if (!info.isFile() || info.size > MAX_SECRET_BYTES)
    throw new ToolEnvelopeError('invalid-option', `the notify secret file ${file} must be a file of at most ${MAX_SECRET_BYTES} bytes`);
  const secret = (await readFile(file, 'utf8')).trim();
  if (secret === '') throw new ToolEnvelopeError('invalid-option', `the notify secret file ${file} is empty`);
  return Buffer.from(secret, 'utf8');
}
