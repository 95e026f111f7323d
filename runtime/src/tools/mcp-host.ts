/**
 * The ToolHost backed by MCP: resolves an agent's `tools` edges to the tools of the servers
 * behind its tool nodes (after include/exclude and the edge's `allow`), names them for models,
 * enforces consent (no unapproved command is spawned) and pinning (a tool whose description or
 * schema changed since approval is disabled), and turns every failure of a call into an error
 * result the agent can react to.
 */
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Flow, FlowEdgeT, FlowNodeT } from '@switchboard/schemas';
import { dict } from '@switchboard/schemas/core';
import { createBuiltinServer } from '../mcp/builtin/index.js';
import { commandLineOf, fingerprintOf } from '../mcp/command-line.js';
import type { McpConnection, ServerSpec } from '../mcp/connection.js';
import { requireFlowConsent, serverCommandLine } from '../mcp/consent.js';
import { envRefsIn, minimalEnv, resolveEnvRefs } from '../mcp/env.js';
import { errorText, McpHostError } from '../mcp/errors.js';
import { StoredOAuthProvider } from '../mcp/oauth/provider.js';
import { canonicalServerUrl, defaultMcpAuthStore, type McpAuthStore } from '../mcp/oauth/store.js';
import { toolPinHash } from '../mcp/pins.js';
import { getMcpPool, type McpPool } from '../mcp/pool.js';
import { TrustStore } from '../mcp/trust.js';
import {
  type BoundSecret,
  checkUrl,
  createGuardedFetch,
  OutboundBlockedError,
  type OutboundPolicy,
} from '../net/outbound.js';
import { redact, redactDeep, SecretsPolicy } from '../net/secrets.js';
import { passesFilter } from './filter.js';
import { assignToolNames } from './names.js';
import type { ToolCallOptions, ToolHandle, ToolHost, ToolHostContext, ToolResult } from './types.js';

export interface McpToolHostOptions {
  /** Defaults to the process-wide pool. */
  pool?: McpPool;
  /** Defaults to `$SWITCHBOARD_HOME/trust.json`. */
  trust?: TrustStore;
  /** Resolves `${env:NAME}` in server env, headers and URLs. Defaults to process.env. */
  env?: Record<string, string | undefined>;
  /** Relative `cwd` of stdio servers is resolved against this (the flow file's folder). */
  baseDir?: string;
  /** The operator's policy for MCP HTTP servers and the `http` built-in. */
  outboundPolicy?: OutboundPolicy;
  /**
   * Which `${env:NAME}` an MCP server's url and headers may name and where each may go (stdio
   * env values are covered by the flow's consent instead). Default: the built-in defaults.
   */
  secrets?: SecretsPolicy;
  /** Absolute roots the `filesystem` built-in may be given. */
  allowedRoots?: string[];
  /**
   * The operator's OAuth logins for remote MCP servers (`switchboard mcp-login`). Default:
   * `$SWITCHBOARD_HOME/mcp-auth`; a server passes the one in its data directory.
   */
  mcpAuth?: McpAuthStore;
  /** The server's data directory: no built-in root may contain it or reach into it beyond the run's folder. */
  storeDir?: string;
  /** Per-call timeout when the tool node sets none. Default 30 000 ms. */
  defaultTimeoutMs?: number;
  /** Largest text given back to a model per call. Default 100 000 characters. */
  maxResultChars?: number;
  /** How the flow is named in "approve it with: switchboard trust …". Default the flow id. */
  flowRef?: string;
  /**
   * The flow whose approval is checked (default: `flow`). For hosts over a derived flow, such as
   * the probe of `switchboard trust --tools`, so that consent is still the real flow's.
   */
  consentFlow?: Flow;
  /** Record a pin for a tool seen for the first time (default true: first use is approval). */
  pinOnFirstUse?: boolean;
}

interface RunState {
  ctx: ToolHostContext;
  conns: Map<string, Promise<McpConnection>>;
  /** `${serverName}/${tool}` already reported as disabled in this run. */
  reported: Set<string>;
}

type ServerCfg = NonNullable<Flow['mcpServers']>[string];

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

/** Where pins of a server are kept: by its approved command line or its URL; built-ins are trusted. */
export function pinKeyOf(cfg: ServerCfg): string | undefined {
  if ('command' in cfg) return `stdio:${fingerprintOf(commandLineOf(cfg))}`;
  if ('url' in cfg) return `http:${cfg.url}`;
  return undefined;
}

export function toResult(
  r: {
    content?: unknown;
    isError?: boolean;
    structuredContent?: unknown;
  },
  maxChars: number,
): ToolResult {
  const parts: string[] = [];
  for (const c of (Array.isArray(r.content) ? r.content : []) as Array<Record<string, unknown>>) {
    switch (c.type) {
      case 'text':
        parts.push(String(c.text ?? ''));
        break;
      case 'image':
      case 'audio':
        parts.push(
          `[${c.type} ${String(c.mimeType ?? '')}, ${String(c.data ?? '').length} base64 characters]`,
        );
        break;
      case 'resource': {
        const res = (c.resource ?? {}) as Record<string, unknown>;
        parts.push(typeof res.text === 'string' ? res.text : `[resource ${String(res.uri ?? '')}]`);
        break;
      }
      case 'resource_link':
        parts.push(`[resource ${String(c.uri ?? '')}]`);
        break;
      default:
        parts.push(`[${String(c.type)} content]`);
    }
  }
  let content = parts.join('\n');
  if (!content && r.structuredContent !== undefined) content = JSON.stringify(r.structuredContent);
  if (content.length > maxChars)
    content = `${content.slice(0, maxChars)}\n[… ${content.length - maxChars} more characters cut]`;
  return {
    content,
    isError: r.isError === true,
    ...(r.structuredContent !== undefined ? { structured: r.structuredContent } : {}),
  };
}

function errorResult(e: unknown, secrets: readonly BoundSecret[] = []): ToolResult {
  const code = e instanceof McpHostError ? e.code : 'mcp.error';
  return { content: redact(`${code}: ${errorText(e)}`, secrets), isError: true };
}

/** A tool result with every secret value taken out (a server may echo what it was sent). */
function redactResult(r: ToolResult, secrets: readonly BoundSecret[]): ToolResult {
  if (secrets.length === 0) return r;
  return {
    ...r,
    content: redact(r.content, secrets),
    ...(r.structured !== undefined ? { structured: redactDeep(r.structured, secrets) } : {}),
  };
}

/** Creates the MCP-backed ToolHost for one flow. */
export function createMcpToolHost(flow: Flow, options: McpToolHostOptions = {}): ToolHost {
  const authStore = options.mcpAuth ?? defaultMcpAuthStore(options.env ?? process.env);
  const pool = options.pool ?? getMcpPool();
  const trust = options.trust ?? new TrustStore();
  const env = options.env ?? process.env;
  const maxChars = options.maxResultChars ?? 100_000;
  const runs = new Map<string, RunState>();
  const nodes = new Map<string, FlowNodeT>(flow.nodes.map((n) => [n.id, n]));
  const flowRef = options.flowRef ?? flow.id;
  const secretsPolicy = options.secrets ?? new SecretsPolicy();
  /** Values never to be sent elsewhere, nor shown: the operator's secrets and resolved stdio env refs. */
  const secrets: BoundSecret[] = secretsPolicy.boundSecrets(env);
  // A stdio env reference may hold an ordinary word (`${env:NODE_ENV}`): only values long enough
  // to be a key count as one, so that "production" is not cut out of every tool result.
  const addSecret = (name: string, value: string) => {
    if (value.length >= 16 && !secrets.some((s) => s.value === value))
      secrets.push({ name, value, hosts: [] });
  };

  function serverCfg(name: string, toolNodeId: string): ServerCfg {
    const cfg = flow.mcpServers && Object.hasOwn(flow.mcpServers, name) ? flow.mcpServers[name] : undefined;
    if (!cfg)
      throw new McpHostError(
        'mcp.bad-config',
        `tool node ${toolNodeId}: server ${JSON.stringify(name)} is not in mcpServers`,
      );
    return cfg;
  }

  function requireConsent(name: string, cfg: ServerCfg): void {
    if (!serverCommandLine(cfg)) return;
    requireFlowConsent(options.consentFlow ?? flow, 'command' in cfg ? 'mcp-server' : 'shell-builtin', name, {
      trust,
      flowRef,
    });
  }

  function specOf(name: string, cfg: ServerCfg, run: RunState): ServerSpec {
    const where = `mcpServers.${name}`;
    if ('command' in cfg) {
      const resolvedEnv = dict<string>();
      for (const [k, v] of Object.entries(cfg.env ?? {})) {
        resolvedEnv[k] = resolveEnvRefs(v, env, `${where}.env.${k}`);
        // Consent covers handing it to the approved process; it still never shows in events.
        for (const ref of envRefsIn(v)) addSecret(ref, env[ref] ?? '');
      }
      const childEnv = dict([...Object.entries(minimalEnv()), ...Object.entries(resolvedEnv)]);
      const cwd = cfg.cwd
        ? isAbsolute(cfg.cwd)
          ? cfg.cwd
          : resolve(options.baseDir ?? process.cwd(), cfg.cwd)
        : undefined;
      const args = cfg.args ?? [];
      return {
        kind: 'stdio',
        key: `stdio:${sha(JSON.stringify([cfg.command, args, Object.entries(childEnv).sort(), cwd ?? null]))}`,
        label: name,
        command: cfg.command,
        args,
        env: childEnv,
        ...(cwd ? { cwd } : {}),
      };
    }
    if ('url' in cfg) {
      // The operator's policy decides, before anything is looked up or sent, whether each
      // variable the url and headers name may go to the host the url names.
      const url = resolveEnvRefs(cfg.url, env, `${where}.url`);
      if (!URL.canParse(url)) throw new McpHostError('mcp.bad-config', `${where}.url is not a valid URL`);
      for (const ref of envRefsIn(cfg.url)) secretsPolicy.check(ref, url, `${where}.url`);
      for (const [k, v] of Object.entries(cfg.headers ?? {}))
        for (const ref of envRefsIn(v)) secretsPolicy.check(ref, url, `${where}.headers.${k}`);
      const headers = dict<string>();
      for (const [k, v] of Object.entries(cfg.headers ?? {}))
        headers[k] = resolveEnvRefs(v, env, `${where}.headers.${k}`);
      const fetch = createGuardedFetch(options.outboundPolicy ?? {}, { secrets });
      // A server without an Authorization header of the flow's own may ask for OAuth: the SDK
      // does it with the operator's stored login (headless: stored tokens, refresh, or the
      // operator's client credentials; never a browser).
      const ownAuth = Object.keys(headers).some((h) => h.toLowerCase() === 'authorization');
      return {
        kind: 'http',
        key: `http:${sha(JSON.stringify([url, Object.entries(headers).sort(), options.outboundPolicy ?? {}, authStore.dir]))}`,
        label: name,
        url,
        headers,
        fetch,
        ...(ownAuth || !oauthCapable(url)
          ? {}
          : { auth: new StoredOAuthProvider({ serverUrl: url, store: authStore, label: name }) }),
      };
    }
    const ctx = run.ctx;
    const dataDir =
      ctx.dataDir ?? join(tmpdir(), 'switchboard-runs', ctx.runId.replace(/[^A-Za-z0-9_-]/g, '_'));
    return {
      kind: 'builtin',
      key: `builtin:${ctx.runId}:${name}`,
      label: name,
      create: () =>
        createBuiltinServer(
          cfg.builtin,
          {
            dataDir,
            options: cfg.options ?? {},
            state: ctx.state,
            // A root never reaches the run's own files (nor, on a server, the data directory).
            protect: { run: dataDir, ...(options.storeDir ? { store: options.storeDir } : {}) },
            ...(options.outboundPolicy ? { outboundPolicy: options.outboundPolicy } : {}),
            secrets,
          },
          { allowedRoots: options.allowedRoots ?? [] },
        ),
    };
  }

  function reportDisabled(
    run: RunState,
    server: string,
    tool: string,
    reason: string,
    nodeId?: string,
  ): void {
    const k = `${server}/${tool}`;
    if (run.reported.has(k)) return;
    run.reported.add(k);
    run.ctx.emit?.({
      type: 'tool.disabled',
      tool: `${server}/${tool}`,
      reason,
      ...(nodeId ? { nodeId } : {}),
    });
  }

  /** Why a tool is disabled by its pin, or undefined when it may be used (pinning it on first use). */
  function pinProblem(cfg: ServerCfg, tool: Tool): string | undefined {
    const key = pinKeyOf(cfg);
    if (!key) return undefined;
    const hash = toolPinHash(tool);
    const pin = trust.getPin(key, tool.name);
    if (!pin) {
      // First use counts as approval: the operator approved the command (or chose the URL).
      if (options.pinOnFirstUse !== false) trust.setPin(key, tool.name, hash);
      return undefined;
    }
    if (pin.hash === hash) return undefined;
    return `the description or input schema of ${tool.name} changed since it was approved; re-approve with: switchboard trust ${flowRef} --tools`;
  }

  function connectionFor(
    name: string,
    cfg: ServerCfg,
    run: RunState,
    toolNodeId: string,
  ): Promise<McpConnection> {
    let p = run.conns.get(name);
    if (!p) {
      p = (async () => {
        requireConsent(name, cfg);
        const spec = specOf(name, cfg, run);
        if (spec.kind === 'http') {
          // A destination the operator did not allow fails by name now, not after retries.
          const verdict = await checkUrl(spec.url, options.outboundPolicy ?? {});
          if (!verdict.ok)
            throw new OutboundBlockedError(spec.url, `mcpServers.${name}.url ${verdict.reason}`);
        }
        const conn = pool.acquire(spec, run.ctx.runId, {
          log: (level, text) =>
            run.ctx.emit?.({ type: 'log', level, text: redact(text, secrets), nodeId: toolNodeId }),
          toolsChanged: (tools) => {
            for (const t of tools) {
              const why =
                pinKeyOf(cfg) && trust.getPin(pinKeyOf(cfg)!, t.name) ? pinProblem(cfg, t) : undefined;
              if (why) reportDisabled(run, name, t.name, why, toolNodeId);
            }
          },
        });
        await conn.ready();
        return conn;
      })();
      run.conns.set(name, p);
      // A failed start is not cached: the next toolsFor sees the connection's own verdict.
      p.catch(() => {
        if (run.conns.get(name) === p) run.conns.delete(name);
      });
    }
    return p;
  }

  function makeHandle(
    run: RunState,
    conn: McpConnection,
    cfg: ServerCfg,
    serverName: string,
    toolNode: FlowNodeT,
    tool: Tool,
    name: string,
  ): ToolHandle {
    const nodeTimeout = typeof toolNode.config.timeoutMs === 'number' ? toolNode.config.timeoutMs : undefined;
    return {
      name,
      description: tool.description ?? '',
      inputSchema: (tool.inputSchema ?? { type: 'object' }) as Record<string, unknown>,
      toolNodeId: toolNode.id,
      server: serverName,
      remoteName: tool.name,
      async call(args: Record<string, unknown>, o: ToolCallOptions): Promise<ToolResult> {
        try {
          // The server's tool as it is now: after a reconnect, wait for the fresh tools/list
          // (list_changed updates it too) so a changed description is seen before the call.
          const current = (await conn.listTools()).find((t) => t.name === tool.name);
          if (!current)
            return errorResult(
              new McpHostError('mcp.tool-unknown', `${serverName} no longer offers ${tool.name}`),
              secrets,
            );
          const why = pinProblem(cfg, current);
          if (why) {
            reportDisabled(run, serverName, tool.name, why, toolNode.id);
            return errorResult(new McpHostError('mcp.tool-disabled', why), secrets);
          }
          const timeoutMs = o.timeoutMs ?? nodeTimeout ?? options.defaultTimeoutMs ?? 30_000;
          const r = await conn.callTool(tool.name, args ?? {}, {
            signal: AbortSignal.any([o.signal, run.ctx.signal]),
            timeoutMs,
            ...(o.elicit ? { elicit: o.elicit } : {}),
            ...(o.sample ? { sample: o.sample } : {}),
            ...(o.onLog
              ? {
                  onProgress: (p: { progress: number; total?: number; message?: string }) =>
                    o.onLog!(
                      `progress ${p.progress}${p.total !== undefined ? `/${p.total}` : ''}${p.message ? ` ${redact(p.message, secrets)}` : ''}`,
                    ),
                }
              : {}),
          });
          return redactResult(toResult(r, maxChars), secrets);
        } catch (e) {
          return errorResult(e, secrets);
        }
      },
    };
  }

  return {
    async toolsFor(agentNodeId: string, ctx: ToolHostContext): Promise<ToolHandle[]> {
      let run = runs.get(ctx.runId);
      if (!run) {
        run = { ctx, conns: new Map(), reported: new Set() };
        runs.set(ctx.runId, run);
      }
      const grants = flow.edges.filter((e: FlowEdgeT) => e.kind === 'tools' && e.target === agentNodeId);
      const picked = new Map<
        string,
        { toolNode: FlowNodeT; serverName: string; cfg: ServerCfg; conn: McpConnection; tool: Tool }
      >();
      for (const edge of grants) {
        const toolNode = nodes.get(edge.source);
        if (toolNode?.kind !== 'tool') continue;
        const serverName = String(toolNode.config.server ?? '');
        const cfg = serverCfg(serverName, toolNode.id);
        let conn: McpConnection;
        try {
          conn = await connectionFor(serverName, cfg, run, toolNode.id);
        } catch (e) {
          // A server that would not start may have echoed what it was sent into the error.
          if (e instanceof Error) e.message = redact(e.message, secrets);
          throw e;
        }
        const allow = Array.isArray(edge.config?.allow) ? (edge.config.allow as string[]) : undefined;
        for (const tool of conn.currentTools) {
          const ok = passesFilter(tool.name, {
            include: toolNode.config.include as string[] | undefined,
            exclude: toolNode.config.exclude as string[] | undefined,
            ...(allow ? { allow } : {}),
          });
          if (!ok) continue;
          const why = pinProblem(cfg, tool);
          if (why) {
            reportDisabled(run, serverName, tool.name, why, toolNode.id);
            continue;
          }
          picked.set(`${toolNode.id}\0${tool.name}`, { toolNode, serverName, cfg, conn, tool });
        }
      }
      const list = [...picked.values()].sort((a, b) =>
        a.toolNode.id === b.toolNode.id
          ? a.tool.name < b.tool.name
            ? -1
            : a.tool.name > b.tool.name
              ? 1
              : 0
          : a.toolNode.id < b.toolNode.id
            ? -1
            : 1,
      );
      const names = assignToolNames(
        list.map((p) => ({ toolNodeId: p.toolNode.id, remoteName: p.tool.name })),
      );
      return list.map((p, i) => makeHandle(run, p.conn, p.cfg, p.serverName, p.toolNode, p.tool, names[i]!));
    },

    async release(runId: string): Promise<void> {
      runs.delete(runId);
      await pool.release(runId);
    },
  };
}

/** A URL the outbound module will refuse anyway (another scheme, credentials) gets no login. */
function oauthCapable(url: string): boolean {
  try {
    canonicalServerUrl(url);
    return true;
  } catch {
    return false;
  }
}
