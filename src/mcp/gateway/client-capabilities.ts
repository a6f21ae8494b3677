/**
 * Which client capability a server-to-client request needs, and whether a client declared it: the
 * rule the SDK v2 server applies to its own `input_required` results (a bare `elicitation: {}` counts
 * as form mode; URL-mode elicitation needs `elicitation.url`; sampling with tools needs
 * `sampling.tools`), for the requests the gateway relays from an upstream. The SDK does not export
 * its copy.
 */
import { MissingRequiredClientCapabilityError, type Request } from '@modelcontextprotocol/server';

type Capabilities = Record<string, unknown>;

/**
 * The client capabilities `req` (`sampling/createMessage`, `elicitation/create`, `roots/list`) needs,
 * in the `ClientCapabilities` shape; `undefined` for any other method.
 */
export function requiredCapabilitiesOf(req: Request): Capabilities | undefined {
  const params = req.params as Record<string, unknown> | undefined;
  switch (req.method) {
    case 'elicitation/create':
      return params?.mode === 'url' ? { elicitation: { url: {} } } : { elicitation: { form: {} } };
    case 'sampling/createMessage':
      return params?.tools !== undefined || params?.toolChoice !== undefined ? { sampling: { tools: {} } } : { sampling: {} };
    case 'roots/list':
      return { roots: {} };
    default:
      return undefined;
  }
}

const isObject = (v: unknown): v is Capabilities => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The part of `required` that `declared` lacks (`undefined`: nothing is missing). */
export function missingCapabilities(required: Capabilities, declared: Capabilities | undefined): Capabilities | undefined {
  const missing: Capabilities = {};
  for (const [name, need] of Object.entries(required)) {
    const have = declared?.[name];
    if (have === undefined) {
      missing[name] = need;
      continue;
    }
    if (!isObject(need) || !isObject(have)) continue;
    // A bare elicitation declaration is form mode (its meaning before modes existed).
    const bare = name === 'elicitation' && have.form === undefined && have.url === undefined;
    const members = Object.keys(need).filter((m) => have[m] === undefined && !(bare && m === 'form'));
    if (members.length > 0) missing[name] = Object.fromEntries(members.map((m) => [m, need[m]]));
  }
  return Object.keys(missing).length > 0 ? missing : undefined;
}

/** The `-32021` refusal of a request whose handling needs `missing` (what {@link missingCapabilities} found). */
export function missingCapabilityError(missing: Capabilities, method: string): MissingRequiredClientCapabilityError {
  return new MissingRequiredClientCapabilityError(
    { requiredCapabilities: missing },
    `The upstream asked for ${method}, which needs client capabilities this request did not declare: ${Object.keys(missing).join(', ')}`,
  );
}
