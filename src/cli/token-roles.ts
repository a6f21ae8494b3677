/**
 * The roles of a tokens file, checked at load: a role that is not a console role but is a near miss
 * of one (`aprover`) is most likely a typo the operator would learn of only at sign-in ("no
 * console role"). It is warned of, not refused: policy conditions may test any role
 * (`'research' in identity.roles`), so a name outside the console's three is legitimate.
 */
import { CONSOLE_ROLES } from '../console/identity.js';
import { suggest } from './suggest.js';

/** One warning per role of `roles` that looks like a misspelt console role, naming `file`. */
export function tokenRoleWarnings(roles: readonly string[], file: string): string[] {
  const known: readonly string[] = CONSOLE_ROLES;
  const out: string[] = [];
  for (const role of roles) {
    if (known.includes(role)) continue;
    const near = suggest(role, known);
    if (near === undefined) continue;
    out.push(
      `${file}: role '${role}' is not a console role (${known.join(', ')}): did you mean '${near}'? ` +
        '(kept as written: policy conditions may test any role)',
    );
  }
  return out;
}
