import { describe, expect, it } from 'vitest';
import { JWT_REFERENCE, REDACTED, redactJwts, redactUrlPasswords, URL_PASSWORD_REFERENCE } from './secret-formats.js';
import { agreesWithReference, takesLinearTime } from './test-support/scanner-checks.js';

/** What the reference expressions give (undefined: nothing replaced). */
const jwtReference = (s: string): string | undefined => {
  const out = s.replace(JWT_REFERENCE, REDACTED);
  return out === s ? undefined : out;
};
const urlReference = (s: string): string | undefined => {
  const out = s.replace(URL_PASSWORD_REFERENCE, (m: string, p: string) => m.replace(`:${p}@`, `:${REDACTED}@`));
  return out === s ? undefined : out;
};

/** Text made of the pieces these formats are made of, so that matches, near misses and overlaps are common. */
const PIECES = [
  'eyJ',
  'eyJhbGc',
  'eyJhbGc.eyJhbGc.',
  'eyJab.eyJ',
  'eyJabcd.eyJabc.',
  'eyJabc.eyJabcd.',
  '.',
  '-',
  '_',
  'a',
  'Z',
  '9',
  ' ',
  '"',
  '://',
  'https://u:p4ss@',
  '://u:p@',
  ':',
  '@',
  '/',
  '+',
  'https',
  'x.y',
  'u',
  'p4ss',
  '\n',
  'é',
];

describe('redactJwts', () => {
  it('replaces what JWT_REFERENCE replaces, on any text', () => {
    agreesWithReference(redactJwts, jwtReference, PIECES);
  });

  it('finds tokens beside other text, and leaves near misses', () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl';
    expect(redactJwts(`Authorization: ${jwt}, next`)).toBe('Authorization: [REDACTED], next');
    expect(redactJwts(`a-${jwt}`)).toBe('a-[REDACTED]');
    expect(redactJwts(`a_${jwt}`)).toBeUndefined(); // no word boundary before it, as \b says
    expect(redactJwts('eyJabc.eyJabcd.x')).toBeUndefined(); // a first segment under 4 characters
    expect(redactJwts(`${jwt} ${jwt}`)).toBe('[REDACTED] [REDACTED]');
  });

  it('takes linear time where the expression took quadratic time', () => {
    // 100 000 characters of eyJ-: 5 s through the expression; a few ms here.
    takesLinearTime(
      (s) => expect(redactJwts(s)).toBeUndefined(),
      ['eyJ-'.repeat(25_000), `eyJaeyJa${'-eyJ'.repeat(25_000)}`, `eyJabcd.eyJ${'-'.repeat(100_000)}`],
    );
  });
});

describe('redactUrlPasswords', () => {
  it('replaces what URL_PASSWORD_REFERENCE replaces, on any text', () => {
    agreesWithReference(redactUrlPasswords, urlReference, PIECES);
  });

  it('keeps the user and the host, and only matches user:password@', () => {
    expect(redactUrlPasswords('DSN postgres://app:hunter2@db:5432/x and amqp://bus:s3cret@mq')).toBe(
      'DSN postgres://app:[REDACTED]@db:5432/x and amqp://bus:[REDACTED]@mq',
    );
    expect(redactUrlPasswords('redis://:s3cret@cache')).toBeUndefined();
    expect(redactUrlPasswords('https://example.com/a:b@c')).toBeUndefined();
    expect(redactUrlPasswords('x-git+ssh://u:p@h')).toBe('x-git+ssh://u:[REDACTED]@h');
  });

  it('takes linear time where the expression took quadratic time', () => {
    takesLinearTime(redactUrlPasswords, ['eyJ-'.repeat(25_000), `${'a-'.repeat(50_000)}://`, `a://${'b:'.repeat(50_000)}`]);
  });
});
