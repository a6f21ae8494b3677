import { describe, expect, it } from 'vitest';
import { createRedactor, isSecretKey, mergeRedactionPointers, REDACTED, redactString } from './redact.js';
import { takesLinearTime } from './test-support/scanner-checks.js';
import { makeAudit } from './test-support/store-suite.js';

describe('redaction', () => {
  it('knows secret keys, and counts that are not secrets', () => {
    for (const k of [
      'password',
      'PASSWD',
      'db_password',
      'secret',
      'client_secret',
      'token',
      'access_token',
      'api_key',
      'apiKey',
      'X-Api-Key',
      'access_key',
      'Authorization',
      'cookie',
      'Set-Cookie',
      'private_key',
      'privateKey',
      'credentials',
    ]) {
      expect([k, isSecretKey(k)]).toEqual([k, true]);
    }
    for (const k of ['max_tokens', 'input_tokens', 'token_count', 'idempotency_key', 'path', 'keyboard', 'author'])
      expect([k, isSecretKey(k)]).toEqual([k, false]);
  });

  it('replaces secret formats inside strings, keeping the rest', () => {
    const cases: [string, string][] = [
      ['Authorization: Bearer abc.DEF-123_xyz', `Authorization: ${REDACTED}`],
      ['jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sgn-sig_x end', `jwt ${REDACTED} end`],
      [`gh ghp_${'a'.repeat(36)}`, `gh ${REDACTED}`],
      [`github_pat_${'A1'.repeat(20)}`, REDACTED],
      ['xoxb-1234567890-abcdefghij', REDACTED],
      ['key AKIAIOSFODNN7EXAMPLE!', `key ${REDACTED}!`],
      [`sk-proj-${'x'.repeat(40)}`, REDACTED],
      ['postgres://app:hunter2@db:5432/x', `postgres://app:${REDACTED}@db:5432/x`],
      ['/srv/app.conf?PassWord=hunter2', `/srv/app.conf?PassWord=${REDACTED}`],
      ['https://u:pw@h/p?a=1&Access_Token=t1#x', `https://u:${REDACTED}@h/p?a=1&Access_Token=${REDACTED}#x`],
    ];
    for (const [text, want] of cases) expect(redactString(text)).toBe(want);
    expect(redactString('nothing to see at https://example.com/a')).toBeUndefined();
  });

  it('redacts a record at any depth and in results, notes the pointers, not the values', () => {
    const redact = createRedactor({ pointers: { 'crm.update': ['/args/customer/ssn', '/result/receipt'] } });
    const result = { receipt: 'r-1', session: { token: 'tok-123' } };
    const rec = makeAudit({
      tool: 'crm.update',
      callEnvelope: {
        args: { customer: { ssn: '078-05-1120', name: 'Ann' }, headers: [{ Authorization: 'Basic Zm9vOmJhcg==' }], note: 'use Bearer zzzzzzzzzzzz' },
      },
      resultEnvelope: { output: result },
      outcome: { status: 'ok', result },
    });
    const out = redact(rec);
    expect(out).not.toBe(rec);
    const text = JSON.stringify(out);
    for (const secret of ['078-05-1120', 'Zm9vOmJhcg==', 'zzzzzzzzzzzz', 'tok-123', 'r-1']) expect(text).not.toContain(secret);
    expect(out.callEnvelope).toEqual({ args: { customer: { ssn: REDACTED, name: 'Ann' }, headers: [{ Authorization: REDACTED }], note: `use ${REDACTED}` } });
    expect(out.redaction).toEqual({
      pointers: expect.arrayContaining([
        '/callEnvelope/args/customer/ssn',
        '/callEnvelope/args/headers/0/Authorization',
        '/callEnvelope/args/note',
        '/resultEnvelope/output/receipt',
        '/resultEnvelope/output/session/token',
      ]),
    });
    // The caller's objects are not touched: the tool and the upstream got the real values.
    expect(rec.callEnvelope.args).toMatchObject({ customer: { ssn: '078-05-1120' } });
  });

  it('returns the record itself when there is nothing to redact, and marks records when off', () => {
    const rec = makeAudit({ callEnvelope: { args: { path: '/tmp/a', max_tokens: 10, idempotency_key: 'k' } } });
    expect(createRedactor()(rec)).toBe(rec);
    expect(createRedactor(false)(rec).redaction).toEqual({ off: true });
    expect(() => createRedactor({ pointers: { t: ['/oops/x'] } })).toThrow(/args\/ or \/result/);
  });

  it('looks for secrets in query strings before deciding a record holds none', () => {
    // The only secret is a parameter's value in a string under a key that names nothing secret.
    for (const [path, value] of [
      ['/srv/app.conf?password=', 'qs-pw-1'],
      ['https://h/p?a=1&SIG=', 'qs-sig-1'],
      ['a=1&api_key=', 'qs-key-1'],
    ] as const) {
      const rec = makeAudit({ callEnvelope: { args: { path: `${path}${value}` } }, resultEnvelope: { output: { echo: `${path}${value}` } } });
      const out = createRedactor()(rec);
      expect(JSON.stringify(out)).not.toContain(value);
      expect(out.callEnvelope.args).toEqual({ path: `${path}${REDACTED}` });
      expect(out.redaction).toEqual({ pointers: expect.arrayContaining(['/callEnvelope/args/path', '/resultEnvelope/output/echo']) });
    }
    const plain = makeAudit({ callEnvelope: { args: { url: 'https://h/p?page=2&max_tokens=5', sum: 'a = b' } } });
    expect(createRedactor()(plain)).toBe(plain);
  });

  it('takes linear time on strings built against the query-string scan, prefilter included', () => {
    const redact = createRedactor();
    const record = (s: string) => redact(makeAudit({ callEnvelope: { args: { text: s } }, resultEnvelope: { output: { text: s } } }));
    takesLinearTime(record, [
      '?a='.repeat(33_334),
      `?token=${'?token='.repeat(14_285)}`,
      `${'a'.repeat(100_000)}=`,
      `${'eyJ-'.repeat(12_500)}${'a=&'.repeat(16_666)}`,
    ]);
  });

  it('merges pointers of several sources per tool, in order, without duplicates, into a fresh object', () => {
    const policy = { t: ['/args/a'], u: ['/result/x'] };
    const merged = mergeRedactionPointers(policy, { t: ['/args/b', '/args/a'] }, undefined, JSON.parse('{"__proto__":["/args/p"]}'));
    expect(merged).toEqual({ t: ['/args/a', '/args/b'], u: ['/result/x'], ['__proto__']: ['/args/p'] });
    expect(Object.hasOwn(merged, '__proto__')).toBe(true);
    merged.t!.push('/args/c');
    expect(policy.t).toEqual(['/args/a']);
  });
});
