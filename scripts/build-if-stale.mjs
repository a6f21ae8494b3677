// `npm start`: build only when dist/ is missing or older than its inputs (scripts/build-inputs.mjs).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inputState, staleReason, writeStamp } from './build-inputs.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
// Read before building: an edit made while the build runs is newer than this and triggers the next one.
const before = inputState(root);
const reason = staleReason(root, before);
if (reason === undefined) {
  console.error('dist/ is up to date with the sources: no build');
} else {
  console.error(`building (${reason})`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const run = spawnSync(npm, ['run', 'build'], { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
  if (run.status !== 0) process.exit(run.status ?? 1);
  writeStamp(root, before);
}
