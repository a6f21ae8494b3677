// `node --import` this file: every module specifier the process resolves is appended, one a line,
// to the file named by RECORD_IMPORTS (module resolution hooks run on a thread of their own, so
// they write the file rather than the process's stdout). For tests of what a command loads.
import { register } from 'node:module';

register(
  `data:text/javascript,${encodeURIComponent(`
import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  appendFileSync(${JSON.stringify(process.env.RECORD_IMPORTS ?? '/dev/null')}, specifier + '\\n');
  return next(specifier, context);
}`)}`,
);
