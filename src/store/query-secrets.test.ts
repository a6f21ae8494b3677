import { describe, expect, it } from 'vitest';
import { MAX_NAME, redactQuerySecrets } from './query-secrets.js';
import { REDACTED } from './secret-formats.js';
import { isSecretParameter } from './secret-names.js';
import { agreesWithReference, takesLinearTime } from './test-support/scanner-checks.js';

/**
 * The plain reading of the module comment (quadratic, and obviously so): from each place that starts
 * a parameter (the start, or after `?&#;`) outside a replaced value, a name, `=` and a value; the
 * value replaced when the name names a secret.
 */
function reference(s: string): string | undefined {
  const parameter = new RegExp(`([\\w.[\\]-]{1,${MAX_NAME}})=([^&#\\s"'<>\`]+)`, 'y');
  let out = '';
  let copied = 0;
  for (let i = 0; i < s.length; i++) {
    if (i < copied || (i > 0 && !'?&#;'.includes(s.charAt(i - 1)))) continue;
    parameter.lastIndex = i;
    const m = parameter.exec(s);
    if (m === null || !isSecretParameter(m[1] as string)) continue;
    out += `${s.slice(copied, i)}${m[1]}=${REDACTED}`;
    copied = i + m[0].length;
  }
  return copied === 0 ? undefined : out + s.slice(copied);
}

/** Text made of the pieces parameters are made of, so that matches, near misses and overlaps are common. */
const PIECES = [
  '?',
  '&',
  '#',
  ';',
  '=',
  'password',
  'PassWord',
  'token',
  'api_key',
  'Api-Key',
  'access_token',
  'secret',
  'sig',
  'X-Amz-Signature',
  'key',
  'max_tokens',
  'token_type',
  'page',
  'a',
  'x1',
  'x'.repeat(MAX_NAME - 5), // with `sig` or `token` a name of MAX_NAME or less, with `secret` a longer one
  '?token=',
  '&password=',
  '?sig=v',
  '#a=1&',
  ';key=',
  '=v',
  '.',
  '-',
  '_',
  '[',
  ']',
  ' ',
  '\n',
  '\u00a0', // whitespace to \s, not to a byte test
  '"',
  "'",
  '`',
  '<',
  '>',
  '/',
  ':',
  'https://h/p',
  REDACTED,
  'é',
];

describe('redactQuerySecrets', () => {
  it('replaces what the plain reading replaces, on any text', () => {
    agreesWithReference(redactQuerySecrets, reference, PIECES);
  });

  it('replaces the value of each secret parameter, with or without a scheme, in any case; keeps the rest', () => {
    const cases: [string, string][] = [
      ['/srv/app.conf?password=hunter2', `/srv/app.conf?password=${REDACTED}`],
      ['https://h/p?Token=x&a=1', `https://h/p?Token=${REDACTED}&a=1`],
      ['?api_key=x', `?api_key=${REDACTED}`],
      ['a=1&secret=x', `a=1&secret=${REDACTED}`],
      ['secret=x&a=1', `secret=${REDACTED}&a=1`],
      ['https://a.blob.core.windows.net/c/f?sv=2022&sp=r&SIG=abc%2Bdef%3D', `https://a.blob.core.windows.net/c/f?sv=2022&sp=r&SIG=${REDACTED}`],
      [
        'https://b.s3.amazonaws.com/k?X-Amz-Credential=AK%2F&X-Amz-Signature=f00d',
        `https://b.s3.amazonaws.com/k?X-Amz-Credential=${REDACTED}&X-Amz-Signature=${REDACTED}`,
      ],
      ['https://app/cb#access_token=at1&token_type=bearer&id_token=it1', `https://app/cb#access_token=${REDACTED}&token_type=bearer&id_token=${REDACTED}`],
      ['/app;jsessionid=A1B2?x=1', `/app;jsessionid=${REDACTED}`],
      ['Server=db;User Id=app;Password=p;w', `Server=db;User Id=app;Password=${REDACTED}`],
      ['see "https://h/?refresh_token=r1" then', `see "https://h/?refresh_token=${REDACTED}" then`],
      [
        '?client_secret=c1&pwd=p1&passwd=p2&apikey=k1&api-key=k2&auth=a1&authorization=a2&session=s1&key=AIza1',
        '?client_secret=[REDACTED]&pwd=[REDACTED]&passwd=[REDACTED]&apikey=[REDACTED]&api-key=[REDACTED]&auth=[REDACTED]&authorization=[REDACTED]&session=[REDACTED]&key=[REDACTED]',
      ],
      // A secret parameter inside a kept value (an unencoded redirect URL) is still found.
      ['/login?next=https://h/cb?token=t1&a=1', `/login?next=https://h/cb?token=${REDACTED}&a=1`],
      ['user[password]=p1', `user[password]=${REDACTED}`],
    ];
    for (const [s, want] of cases) expect([s, redactQuerySecrets(s)]).toEqual([s, want]);
  });

  it('names secrets as keys do, and the names only URLs give secrets', () => {
    const secret = ['password', 'PASSWD', 'pwd', 'Pass', 'token', 'Access_Token', 'refresh_token', 'id_token', 'api_key', 'APIKEY', 'api-key', 'key'];
    secret.push('secret', 'client_secret', 'sig', 'Signature', 'X-Amz-Signature', 'x-amz-security-token', 'auth', 'Authorization', 'session', 'JSESSIONID');
    for (const name of secret) expect([name, isSecretParameter(name)]).toEqual([name, true]);
    for (const name of ['page', 'max_tokens', 'token_type', 'code', 'state', 'keyword', 'signature_method', 'author', 'a'])
      expect([name, isSecretParameter(name)]).toEqual([name, false]);
  });

  it('leaves what is not a secret parameter', () => {
    for (const s of [
      'https://h/p?page=2&max_tokens=10&token_type=bearer&code=200',
      'the password=x is not in a query string', // after a space: a sentence, not a parameter
      '?password=&token=', // nothing to replace
      'mypassword is a=b',
      `${'x'.repeat(MAX_NAME - 8)}password=${'y'.repeat(0)}`, // empty value
      `?${'x'.repeat(MAX_NAME - 7)}password=v`, // a name longer than MAX_NAME
      'aGVsbG8gdG9rZW4gd29ybGQ=', // base64 padding, not a parameter
    ])
      expect([s, redactQuerySecrets(s)]).toEqual([s, undefined]);
    expect(redactQuerySecrets(`?${'x'.repeat(MAX_NAME - 8)}password=v`)).toBe(`?${'x'.repeat(MAX_NAME - 8)}password=${REDACTED}`);
    // Already redacted: the same text again (which redactString reports as nothing to redact).
    expect(redactQuerySecrets(`?token=${REDACTED}`)).toBe(`?token=${REDACTED}`);
  });

  it('takes linear time on text built to make a scan go back over what it read', () => {
    // Each would be quadratic for a scan that read a value before asking its name, read names
    // backwards without a bound, or went back into a replaced value.
    takesLinearTime(redactQuerySecrets, [
      '?a='.repeat(33_334),
      '='.repeat(100_000),
      `${'a'.repeat(100_000)}=`,
      `?${'a='.repeat(50_000)}`,
      `?token=${'?token='.repeat(14_285)}`,
      '&password'.repeat(11_111),
      `${'x'.repeat(MAX_NAME)}=`.repeat(1_500),
    ]);
  });
});
