/**
 * The gateway's diagnostics with levels and stable fields: `text` (the lines it always wrote,
 * `tool-envelope gateway: ...`) or `json` (one pino object a line, for a log shipper), filtered by
 * level; and with `--log-calls` one line per call (tool, principal, status, category, latency,
 * ids), never argument values. pino is loaded only for `json`.
 */
import type { Writable } from 'node:stream';
import type { ToolOutcome } from 'tool-envelope/core';
import type { GatewayCall, GatewayGovernor } from '../mcp/call.js';

/** The levels, lowest first. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export type LogFormat = 'text' | 'json';

/** The stable fields of a diagnostic line. */
export interface LogFields {
  level: Exclude<LogLevel, 'silent'>;
  /** What wrote it: gateway, upstream, http, stdio, audit, approvals, call. */
  component: string;
  /** The upstream's name, for its lines. */
  upstream?: string;
}

/** The fields of a `--log-calls` line. */
export interface CallLogFields {
  tool: string;
  upstream: string;
  principal: string | null;
  status: string;
  category: string | null;
  code: string | null;
  latencyMs: number;
  toolCallId: string;
  runId: string;
  traceId: string;
  sessionId: string | null;
}

/** A diagnostic line's level and fields, from the words the gateway's parts start it with. */
export function classifyLine(line: string): { fields: LogFields; msg: string } {
  const up = /^\[([^\]\n]{1,200})\] /.exec(line);
  if (up) {
    const msg = line.slice(up[0].length);
    const trouble = /fail|closed|killed|restart|error|exited|no pong|dropped/i.test(msg);
    return { fields: { level: trouble ? 'warn' : 'info', component: 'upstream', upstream: up[1]! }, msg };
  }
  const part = /^(http|stdio|audit|approvals): /.exec(line);
  if (part)
    return { fields: { level: part[1] === 'audit' || part[1] === 'approvals' ? 'error' : 'warn', component: part[1]! }, msg: line.slice(part[0].length) };
  if (line.startsWith('WARNING: ')) return { fields: { level: 'warn', component: 'gateway' }, msg: line.slice(9) };
  return { fields: { level: /fail/i.test(line) ? 'warn' : 'info', component: 'gateway' }, msg: line };
}

/** Writes the gateway's diagnostics. */
export interface GatewayLogger {
  /** One of the gateway's diagnostic lines (its level from {@link classifyLine}). */
  line(text: string): void;
  /** One `--log-calls` line. */
  call(fields: CallLogFields): void;
  /** Why the gateway stops (a store that cannot open, a busy port): written at any level, `--quiet` too. */
  fatal(text: string): void;
  /** One line with stable fields (an approval's event, a notification's delivery): `msg` then `key=value` pairs in text. */
  event(level: Exclude<LogLevel, 'silent'>, component: string, msg: string, fields: EventLogFields): void;
}

/** The fields of an {@link GatewayLogger.event} line: flat, so they read the same as text pairs and as JSON. */
export type EventLogFields = Readonly<Record<string, string | number | boolean | null>>;

/** `key=value` pairs of a text line: `-` for null, quoted when a value has spaces, quotes or `=`. */
function textPairs(fields: Readonly<Record<string, unknown>>): string {
  return Object.entries(fields)
    .map(([k, v]) => `${k}=${v === null ? '-' : typeof v === 'string' && /[\s"=]/.test(v) ? JSON.stringify(v) : v}`)
    .join(' ');
}

const PREFIX = 'tool-envelope gateway: ';

/** The logger for `--log-format` and `--log-level`. */
export async function createLogger(options: { format: LogFormat; level: LogLevel; stream: Writable }): Promise<GatewayLogger> {
  const min = LOG_LEVELS.indexOf(options.level);
  const shown = (level: LogLevel): boolean => LOG_LEVELS.indexOf(level) >= min && options.level !== 'silent';
  if (options.format === 'text') {
    return {
      line(text) {
        if (shown(classifyLine(text).fields.level)) options.stream.write(`${PREFIX}${text}\n`);
      },
      call(f) {
        if (shown('info')) options.stream.write(`${PREFIX}call ${textPairs(f as unknown as Record<string, unknown>)}\n`);
      },
      fatal(text) {
        options.stream.write(`${PREFIX}${text}\n`);
      },
      event(level, _component, msg, fields) {
        if (shown(level)) options.stream.write(`${PREFIX}${msg} ${textPairs(fields)}\n`);
      },
    };
  }
  const { pino } = await import('pino');
  const logger = pino(
    {
      // `silent` is applied by `line` and `call`; pino keeps `fatal` so a fatal line is written still.
      level: options.level === 'silent' ? 'fatal' : options.level,
      base: { service: 'tool-envelope-gateway' },
      formatters: { level: (label) => ({ level: label }) },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.stream,
  );
  return {
    line(text) {
      const { fields, msg } = classifyLine(text);
      const { level, ...rest } = fields;
      if (shown(level)) logger[level](rest, msg);
    },
    call(f) {
      if (shown('info')) logger.info({ component: 'call', ...f }, 'call');
    },
    fatal(text) {
      logger.fatal({ component: 'gateway' }, text);
    },
    event(level, component, msg, fields) {
      if (shown(level)) logger[level]({ component, ...fields }, msg);
    },
  };
}

/** A governor that writes one `--log-calls` line per call with its governed outcome, around `inner`. */
export function callLogGovernor(logger: GatewayLogger, inner?: GatewayGovernor): GatewayGovernor {
  return {
    async run(call: GatewayCall, execute: () => Promise<ToolOutcome>): Promise<ToolOutcome> {
      const t0 = performance.now();
      const outcome = inner ? await inner.run(call, execute) : await execute();
      const head = call.principalChain[0] ?? call.caller?.principal;
      logger.call({
        tool: call.tool,
        upstream: call.upstream,
        principal: head ? `${head.kind}:${head.id}` : null,
        status: outcome.status,
        category: outcome.error?.category ?? null,
        code: outcome.error?.code ?? null,
        latencyMs: Math.round((performance.now() - t0) * 1000) / 1000,
        toolCallId: outcome.toolCallId ?? call.toolCallId,
        runId: outcome.runId ?? call.runId,
        traceId: outcome.traceId ?? call.traceId,
        sessionId: call.sessionId ?? null,
      });
      return outcome;
    },
  };
}
