/**
 * Names that say the value beside them is a secret: keys of JSON objects (the redactor replaces the
 * value under them) and the parameters of query strings (`?password=...`, query-secrets.ts).
 *
 * A name is compared lower case without `-`, `_` and spaces. A key names a secret when it holds a
 * secret fragment (password, passwd, passphrase, secret, token, apikey, accesskey, authorization,
 * cookie, privatekey, credential, signingkey, sessionkey), unless it counts things (`max_tokens`,
 * `token_count`) or is a ContextOS field. A parameter names a secret when a key of that name would,
 * or when it is one of the names only URLs give secrets: `pass`, `pw`, `pwd`, `sig` (Azure SAS),
 * `auth` (Firebase), `key` (Google APIs), `session`, `sessionid`, `sid`, `jsessionid`, `phpsessid`,
 * or ends with `signature` (`Signature`, `X-Amz-Signature`, `X-Goog-Signature`, `oauth_signature`).
 * `pwd` is no key fragment: as a key it is as often a working directory. `key` alone also names
 * things that are not secret; a value replaced for nothing costs the log one readable value, a key
 * kept costs a credential. `code` (an OAuth authorization code) is not in the list: it is also every
 * country, error and status code, and is spent once exchanged.
 */

// Normalised key fragments that name a secret.
const SECRET_KEY = /passw(?:or)?d|passphrase|secret|token|apikey|accesskey|authori[sz]ation|cookie|privatekey|credential|signingkey|sessionkey/;
// Keys that contain a fragment above but count things (`max_tokens`, `token_count`) or are ContextOS fields.
const NOT_SECRET_KEY = /tokens$|tokencount$|^tokentype$|^idempotencykey$/;
// Normalised parameter names that name a secret only in URLs.
const SECRET_PARAMETER = /^(?:pass|pw|pwd|sig|auth|key|session|sessionid|sid|jsessionid|phpsessid)$|signature$/;

/** Lower case without `-`, `_` and whitespace; a name that has none of them is taken as it is (no copies). */
function normalise(name: string): string {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if ((c >= 0x41 && c <= 0x5a) || c === 0x2d || c === 0x5f || c <= 0x20 || c > 0x7e) return name.toLowerCase().replace(/[-_\s]/g, '');
  }
  return name;
}
const namesSecret = (normalised: string): boolean => SECRET_KEY.test(normalised) && !NOT_SECRET_KEY.test(normalised);

/** A verdict per name, remembered (a bounded number of them): the same few names come back in every record. */
class Verdicts {
  private readonly known = new Map<string, boolean>();
  constructor(
    private readonly decide: (name: string) => boolean,
    // What is kept of a name: a copy when the name can be a slice of a long string, which a kept slice would keep alive.
    private readonly keep: (name: string) => string,
  ) {}

  of(name: string): boolean {
    let verdict = this.known.get(name);
    if (verdict === undefined) {
      verdict = this.decide(name);
      if (this.known.size >= MAX_VERDICTS) this.known.clear();
      this.known.set(this.keep(name), verdict);
    }
    return verdict;
  }
}

const MAX_VERDICTS = 4096;
const keyVerdicts = new Verdicts(
  (key) => namesSecret(normalise(key)),
  (key) => key,
);
const parameterVerdicts = new Verdicts(
  (name) => {
    const k = normalise(name);
    return namesSecret(k) || SECRET_PARAMETER.test(k);
  },
  (name) => Buffer.from(name, 'utf16le').toString('utf16le'),
);

/** True when a key names a secret (see the module comment). */
export function isSecretKey(key: string): boolean {
  return keyVerdicts.of(key);
}

/** True when a query-string parameter names a secret (see the module comment). */
export function isSecretParameter(name: string): boolean {
  return parameterVerdicts.of(name);
}
