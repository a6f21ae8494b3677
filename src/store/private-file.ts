/**
 * Private files: what the call log writes to disk (the SQLite database and its `-wal`/`-shm`,
 * reports, failure summaries, exports) holds arguments and results, so it is created readable by
 * its owner only (0600), whatever the umask. A regular file that already exists with group or
 * other permission bits is left as it is (the operator may have chosen that) but gets a warning. A
 * device, FIFO or socket (`/dev/null`, `/dev/stdout`) is written as it is, without a warning: its
 * mode is not the operator's to change. A directory where the file should be is an error.
 */
import { constants, createWriteStream, openSync, closeSync, fchmodSync, statSync, type Stats, type WriteStream } from 'node:fs';
import { ToolEnvelopeError } from 'tool-envelope/core';
import { writeFile } from 'node:fs/promises';

/** Mode of every file the call log creates. */
export const PRIVATE_MODE = 0o600;

/** How a looser existing file is reported (default: a `ToolEnvelopeWarning` process warning). */
export type LooseFileWarning = (file: string, mode: number) => void;

const defaultWarning: LooseFileWarning = (file, mode) =>
  process.emitWarning(
    `tool-envelope: ${file} has mode ${mode.toString(8).padStart(4, '0')}: group or others can read the call log it holds (chmod 600 ${file})`,
    'ToolEnvelopeWarning',
  );

function checkMode(file: string, stat: Stats, warn: LooseFileWarning): void {
  if (stat.isFile() && (stat.mode & 0o077) !== 0) warn(file, stat.mode & 0o7777);
}

/**
 * Creates `file` empty with mode 0600 when it does not exist (atomically: of several processes,
 * one creates it); warns when it exists as a regular file with group or other bits. Returns true
 * when it created it. Throws `invalid-option` when `file` is a directory.
 */
export function ensurePrivateFile(file: string, warn: LooseFileWarning = defaultWarning): boolean {
  let fd: number;
  try {
    fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, PRIVATE_MODE);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    const stat = statSync(file);
    if (stat.isDirectory()) throw new ToolEnvelopeError('invalid-option', `${file} is a directory: give the path of a file`);
    checkMode(file, stat, warn);
    return false;
  }
  try {
    // The umask may have taken bits off; the mode is exactly 0600 either way.
    fchmodSync(fd, PRIVATE_MODE);
  } finally {
    closeSync(fd);
  }
  return true;
}

/**
 * Warns about each of the files that exists with group or other bits (e.g. a database's `-wal`
 * and `-shm` made by an older version).
 */
export function warnIfLoose(files: readonly string[], warn: LooseFileWarning = defaultWarning): void {
  for (const f of files) {
    try {
      checkMode(f, statSync(f), warn);
    } catch {
      // Missing: nothing to warn about.
    }
  }
}

/**
 * Writes `data` to `file`, creating it 0600 (an existing file keeps its mode and, when looser,
 * gets a warning).
 */
export async function writePrivateFile(file: string, data: string | Uint8Array, warn: LooseFileWarning = defaultWarning): Promise<void> {
  ensurePrivateFile(file, warn);
  await writeFile(file, data);
}

/** A write stream to `file`, created 0600 (an existing looser file gets a warning). */
export function createPrivateWriteStream(file: string, warn: LooseFileWarning = defaultWarning): WriteStream {
  ensurePrivateFile(file, warn);
  return createWriteStream(file, { flags: 'w', mode: PRIVATE_MODE });
}
