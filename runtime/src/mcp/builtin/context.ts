/**
 * What a built-in server is given when it is created: the run it serves, where its files live,
 * its options from the flow's `mcpServers` entry, and host-side capabilities (state, policy).
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { BoundSecret, OutboundPolicy } from '../../net/outbound.js';
import type { ToolHostContext } from '../../tools/types.js';

/** The operator's outbound policy (`--allow-outbound`), as the `http` built-in applies it. */
export type OutboundPolicyLike = OutboundPolicy;

export interface BuiltinContext {
  /** The run's data directory; documents and workspaces live below it. */
  dataDir: string;
  /** The `options` object of the flow's mcpServers entry. */
  options: Record<string, unknown>;
  /** The run's JSON state (the `state` built-in). */
  state?: ToolHostContext['state'];
  /** The operator's outbound policy (the `http` built-in). */
  outboundPolicy?: OutboundPolicyLike;
  /**
   * Set when the built-in serves a run whose store lives on disk: a root must not reach it
   * (`confineRoot`). `run` is the run's folder (its event log, tool journal and checkpoints);
   * `store`, when known, the whole data directory (catalog, every run).
   */
  protect?: { run: string; store?: string };
  /** Secret values the `http` built-in must never send to a host they are not bound to. */
  secrets?: readonly BoundSecret[];
}

export const SERVER_VERSION = '0.1.0';

export function text(t: string, structured?: Record<string, unknown>): CallToolResult {
  return {
    content: [{ type: 'text', text: t }],
    ...(structured ? { structuredContent: structured } : {}),
  };
}

export function json(value: unknown): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }] };
}

export function fail(t: string): CallToolResult {
  return { content: [{ type: 'text', text: t }], isError: true };
}

export function optString(o: Record<string, unknown>, k: string): string | undefined {
  const v = o[k];
  return typeof v === 'string' ? v : undefined;
}

export function optNumber(o: Record<string, unknown>, k: string, dflt: number): number {
  const v = o[k];
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : dflt;
}
