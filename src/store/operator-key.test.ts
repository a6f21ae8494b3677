import { mkdtemp, rm, stat, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ToolEnvelopeError } from '../core/errors.js';
import { loadOperatorKey, operatorKeyFromSecret } from './operator-key.js';

const dirs: string[] = [];
async function scratch(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'te-key-'));
  dirs.push(d);
  return d;
}
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

describe('operator key', () => {
  it('signs and verifies; another key or other data does not verify', () => {
    const a = operatorKeyFromSecret(Buffer.alloc(32, 1));
    const b = operatorKeyFromSecret(Buffer.alloc(32, 2));
    const sig = a.sign('approval:1');
    expect(a.verify('approval:1', sig)).toBe(true);
    expect(a.verify('approval:2', sig)).toBe(false);
    expect(b.verify('approval:1', sig)).toBe(false);
    expect(a.verify('approval:1', `${sig}x`)).toBe(false);
    expect(a.id).toMatch(/^[0-9a-f]{16}$/);
    expect(a.id).not.toBe(b.id);
  });

  it('refuses short keys', () => {
    expect(() => operatorKeyFromSecret(Buffer.alloc(8))).toThrow(ToolEnvelopeError);
  });

  it('creates a 0600 key file under umask 022 and reads the same key back', async () => {
    const dir = await scratch();
    const file = join(dir, 'sub', 'operator.key');
    const old = process.umask(0o022);
    try {
      const created = await loadOperatorKey({ file, create: true, env: {} });
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      const again = await loadOperatorKey({ file, env: {} });
      expect(again.id).toBe(created.id);
      expect(again.verify('x', created.sign('x'))).toBe(true);
    } finally {
      process.umask(old);
    }
  });

  it('concurrent creation agrees on one key', async () => {
    const file = join(await scratch(), 'operator.key');
    const keys = await Promise.all(Array.from({ length: 10 }, () => loadOperatorKey({ file, create: true, env: {} })));
    expect(new Set(keys.map((k) => k.id)).size).toBe(1);
  });

  it('refuses a key file readable by others', async () => {
    const file = join(await scratch(), 'operator.key');
    await writeFile(file, Buffer.alloc(32, 3).toString('hex'));
    await chmod(file, 0o644);
    await expect(loadOperatorKey({ file, env: {} })).rejects.toMatchObject({ code: 'insecure-key-file' });
  });

  it('takes TOOL_ENVELOPE_KEY from the environment first, and fails on a missing file without create', async () => {
    const key = await loadOperatorKey({ env: { TOOL_ENVELOPE_KEY: Buffer.alloc(32, 4).toString('base64') } });
    expect(key.source).toBe('env');
    expect(key.id).toBe(operatorKeyFromSecret(Buffer.alloc(32, 4)).id);
    await expect(loadOperatorKey({ file: join(await scratch(), 'none.key'), env: {} })).rejects.toMatchObject({ code: 'invalid-option' });
  });
});
