import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { vendoredDir } from '../../test/oracle.js';
import { PRINCIPAL_KINDS, isPrincipalKind } from './taxonomy.js';

describe('principal kinds', () => {
  it('are exactly the enum of the published run-context Principal.kind', () => {
    const schema = JSON.parse(readFileSync(path.join(vendoredDir, 'contextos-run-context.v1.principal.schema.json'), 'utf8'));
    expect([...PRINCIPAL_KINDS].sort()).toEqual([...schema.$defs.Principal.properties.kind.enum].sort());
  });

  it('isPrincipalKind accepts the four kinds and nothing else', () => {
    for (const k of PRINCIPAL_KINDS) expect(isPrincipalKind(k)).toBe(true);
    for (const v of ['admin', 'User', '', undefined, null, 1, ['user']]) expect(isPrincipalKind(v)).toBe(false);
  });
});
