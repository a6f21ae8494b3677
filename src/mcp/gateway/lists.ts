/**
 * Resources and prompts across upstreams: routing a request about a resource URI to its owner,
 * and merging the list pages of several upstreams.
 */
import type { Request, Result, ServerContext } from '@modelcontextprotocol/server';
import { ProtocolErrorCode as ErrorCode } from '@modelcontextprotocol/server';
import type { JsonObject } from 'tool-envelope/core';
import { rpcError } from '../wire/rpc-errors.js';
import type { Upstream } from '../upstream/upstream.js';

/** What the list helpers need of the gateway. */
export interface ListHost {
  readonly upstreams: Upstream[];
  readonly resourceOwners: Map<string, Upstream>;
  forward(up: Upstream, req: Request, ctx: ServerContext): Promise<Result>;
}

/**
 * Forwards a request about one resource URI to the upstream that owns it; an unknown URI (a
 * template instance) is asked of each upstream with resources until one answers.
 */
export async function forwardByUri(host: ListHost, req: Request, extra: ServerContext, uri: string): Promise<Result> {
  if (host.upstreams.length === 1) return host.forward(host.upstreams[0]!, req, extra);
  const owner = host.resourceOwners.get(uri);
  if (owner) return host.forward(owner, req, extra);
  // Unknown URI (a template instance): ask each upstream with resources until one answers.
  let last: unknown;
  for (const up of host.upstreams.filter((u) => u.capabilities?.resources)) {
    try {
      const result = await host.forward(up, req, extra);
      host.resourceOwners.set(uri, up);
      return result;
    } catch (err) {
      last = err;
    }
  }
  throw last ?? rpcError(ErrorCode.InvalidParams, `No upstream serves '${uri}'`);
}

/**
 * A list request answered for every upstream: one upstream's answer exactly (cursor and all), or
 * the pages of all upstreams merged (prompt names prefixed, resource owners remembered).
 */
export async function listMerged(host: ListHost, req: Request, extra: ServerContext, key: 'resources' | 'resourceTemplates' | 'prompts'): Promise<Result> {
  const capability = key === 'prompts' ? 'prompts' : 'resources';
  const ups = host.upstreams.filter((u) => u.capabilities?.[capability]);
  // One upstream: its answer exactly, cursor and all.
  if (host.upstreams.length === 1) return host.forward(host.upstreams[0]!, req, extra);
  const items: JsonObject[] = [];
  for (const up of ups) {
    let cursor: string | undefined;
    do {
      const page = await host.forward(up, { ...req, params: { ...req.params, ...(cursor ? { cursor } : {}) } }, extra);
      const list = (page[key] as JsonObject[] | undefined) ?? [];
      for (const item of list) {
        if (key === 'prompts') items.push({ ...item, name: (up.spec.prefix ?? '') + String(item.name) });
        else {
          if (typeof item.uri === 'string') host.resourceOwners.set(item.uri, up);
          items.push(item);
        }
      }
      cursor = typeof page.nextCursor === 'string' ? page.nextCursor : undefined;
    } while (cursor);
  }
  return { [key]: items };
}
