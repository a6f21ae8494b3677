// A generated source written so that a reader never sees it half-written, and not rewritten when
// its text is the same: `npm run gen` may run twice at once (.ci/run typechecks beside the build,
// and both generate), while tsc reads the files.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

export function writeGenerated(file, text) {
  if (existsSync(file) && readFileSync(file, 'utf8') === text) return;
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}
