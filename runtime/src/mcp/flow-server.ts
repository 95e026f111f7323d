/**
 * A flow served as an MCP server (`switchboard mcp FLOW`): one tool whose name, description and
 * input schema come from the flow's start node (default input `{ input: string }`). A call runs
 * the flow (served-call.ts): progress notifications naming nodes, log messages at the client's
 * level (`logging/setLevel`), human nodes asked through elicitation, the final answer as the
 * result, and a client's cancellation cancels the run. `createFlowsMcpServer` serves several
 * flows, one tool each (`/mcp` of `switchboard serve`).
 */
import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer, type Server as HttpServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  isInitializeRequest,
  ListToolsRequestSchema,
  type LoggingLevel,
  SetLevelRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { checkAgainstSchema, type Flow } from '@switchboard/schemas';
import type { RunFlow, RunOptions, RunResult } from '../engine/types.js';
import { sanitizeName } from '../tools/names.js';
import { BoundedEventStore, SERVED_RETRY_MS } from './event-store.js';
import { callServedFlow, type StartServedRun } from './served-call.js';
import { canElicitForm } from './served-human.js';
import { DEFAULT_LOG_LEVEL } from './served-log.js';

export { progressLine } from './served-call.js';

export const DEFAULT_INPUT_SCHEMA = {
  type: 'object',
  properties: { input: { type: 'string', description: 'The task or question for the flow.' } },
  required: ['input'],
} as const;

export interface FlowToolInfo {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  /** True when the schema is the default `{ input }` and the run gets the string itself. */
  plainInput: boolean;
}

/** The one tool a flow is served as, from its start node's description and input schema. */
export function flowToolInfo(flow: Flow): FlowToolInfo {
  const start = flow.nodes.find((n) => n.kind === 'start');
  const cfg = (start?.config ?? {}) as { description?: unknown; inputSchema?: unknown };
  const schema =
    cfg.inputSchema && typeof cfg.inputSchema === 'object' && !Array.isArray(cfg.inputSchema)
      ? (cfg.inputSchema as Record<string, unknown>)
      : undefined;
  return {
    name: sanitizeName(flow.id).slice(0, 64),
    description:
      (typeof cfg.description === 'string' && cfg.description) ||
      flow.description ||
      `Runs the flow "${flow.name}".`,
    inputSchema: schema ? { type: 'object', ...schema } : { ...DEFAULT_INPUT_SCHEMA },
    plainInput: !schema,
  };
}

export interface FlowServerOptions {
  runFlow: RunFlow;
  /** Options of every run (models, tools factory result, baseDir…); signal and onEvent are set per call. */
  runOptions: () => RunOptions;
  /** Called when a run ended, to release what it held (the tool host). */
  afterRun?: (runId: string) => Promise<void>;
  /** Told how each run ended (the CLI logs it on stderr). */
  onRunEnd?: (result: RunResult) => void;
}

/** The flows a multi-flow server offers, looked up at each list and call (they may change). */
export interface ServedFlows {
  /** Every flow offered now. */
  list(): Promise<Flow[]>;
  /** Starts a run of one of them for a call. */
  start: StartServedRun;
  /** Told how each run ended. */
  onRunEnd?: (result: RunResult) => void;
  /** Server name in `initialize`. */
  name: string;
}

/** Tool names to flows, first flow wins when two ids sanitize to the same name. */
function toolsOf(flows: Flow[]): Map<string, { flow: Flow; info: FlowToolInfo }> {
  const m = new Map<string, { flow: Flow; info: FlowToolInfo }>();
  for (const flow of flows) {
    const info = flowToolInfo(flow);
    if (!m.has(info.name)) m.set(info.name, { flow, info });
  }
  return m;
}

/**
 * A low-level MCP server (the flows' schemas are JSON Schema, not zod) with one tool per flow;
 * one instance per MCP session, so the log level it keeps is that session's.
 */
export function createFlowsMcpServer(served: ServedFlows): Server {
  const server = new Server(
    { name: served.name, version: '0.1.0' },
    { capabilities: { tools: {}, logging: {} } },
  );
  let level: LoggingLevel = DEFAULT_LOG_LEVEL;
  // The SDK keeps levels per transport session id; one server per session keeps it here instead.
  server.setRequestHandler(SetLevelRequestSchema, async (req) => {
    level = req.params.level;
    return {};
  });
  const session = {
    canElicit: () => canElicitForm(server.getClientCapabilities()),
    logLevel: () => level,
  };
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [...toolsOf(await served.list()).values()].map(({ info }) => ({
      name: info.name,
      description: info.description,
      inputSchema: info.inputSchema as { type: 'object' },
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra): Promise<CallToolResult> => {
    const tools = toolsOf(await served.list());
    const tool = tools.get(req.params.name);
    if (!tool)
      return {
        content: [
          {
            type: 'text',
            text: `unknown tool ${req.params.name}; this server has ${[...tools.keys()].join(', ') || 'no tools'}`,
          },
        ],
        isError: true,
      };
    const { flow, info } = tool;
    const args = (req.params.arguments ?? {}) as Record<string, unknown>;
    const check = checkAgainstSchema(info.inputSchema, args);
    if (!check.valid)
      return {
        content: [{ type: 'text', text: `invalid arguments: ${check.errors.join('; ')}` }],
        isError: true,
      };
    let out: Awaited<ReturnType<typeof callServedFlow>>;
    try {
      out = await callServedFlow({
        flow,
        input: info.plainInput ? String(args.input ?? '') : args,
        progressToken: req.params._meta?.progressToken,
        extra,
        session,
        start: served.start,
      });
    } catch (e) {
      return {
        content: [{ type: 'text', text: `the run could not start: ${(e as Error).message}` }],
        isError: true,
      };
    }
    served.onRunEnd?.(out.run);
    return out.result;
  });
  return server;
}

/** The one-flow server of `switchboard mcp FLOW`: runs in this process, through the engine. */
export function createFlowMcpServer(flow: Flow, o: FlowServerOptions): Server {
  const info = flowToolInfo(flow);
  const start: StartServedRun = async (f, input, hooks) => {
    const base = o.runOptions();
    const handle = o.runFlow(f, input, {
      ...base,
      // A person is asked through the client (elicitation) or the call fails by name.
      humanInput: 'wait',
      signal: base.signal ? AbortSignal.any([base.signal, hooks.signal]) : hooks.signal,
      onEvent: (e) => {
        base.onEvent?.(e);
        hooks.onEvent(e);
      },
    });
    const result = handle.result.finally(() => o.afterRun?.(handle.runId).catch(() => {}));
    return { runId: handle.runId, send: (cmd) => handle.send(cmd), result };
  };
  return createFlowsMcpServer({
    name: `switchboard-${info.name}`,
    list: async () => [flow],
    start,
    ...(o.onRunEnd ? { onRunEnd: o.onRunEnd } : {}),
  });
}

const MAX_BODY = 4 * 1024 * 1024;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY) throw Object.assign(new Error('request body too large'), { status: 413 });
    chunks.push(c as Buffer);
  }
  if (size === 0) return undefined;
  let text: string;
  try {
    text = strictUtf8.decode(Buffer.concat(chunks));
  } catch {
    // Never replaced by U+FFFD and passed on as the flow's input.
    throw Object.assign(new Error('request body is not valid UTF-8'), { status: 400 });
  }
  try {
    return JSON.parse(text);
  } catch {
    throw Object.assign(new Error('request body is not JSON'), { status: 400 });
  }
}

export interface FlowHttpServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Serves the flow over streamable HTTP on 127.0.0.1 only. Like the main server, every request is
 * checked before anything else: Host must be 127.0.0.1:PORT or localhost:PORT (DNS rebinding) and
 * an Origin, when a browser sends one, must be this server's own (a page elsewhere must not call
 * the tool, open a stream or end a session); clients that send no Origin (SDKs, curl) pass. The
 * SDK transport's own DNS-rebinding protection is on too, with the same lists. One MCP session
 * per client.
 */
export async function serveFlowHttp(flow: Flow, o: FlowServerOptions, port: number): Promise<FlowHttpServer> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  let httpServer: HttpServer;
  let actualPort = port;
  const hosts = () => [`127.0.0.1:${actualPort}`, `localhost:${actualPort}`];
  // Exact matches: browsers send the origin lower-case, without a path or credentials.
  const origins = () => hosts().map((h) => `http://${h}`);
  const fail = (res: import('node:http').ServerResponse, status: number, message: string) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
  };
  httpServer = createHttpServer(async (req, res) => {
    try {
      if (!hosts().includes(req.headers.host ?? ''))
        return fail(res, 403, 'the Host header does not name this server');
      const origin = req.headers.origin;
      if (origin !== undefined && !origins().includes(origin))
        return fail(
          res,
          403,
          `cross-origin requests are not accepted (Origin ${JSON.stringify(origin).slice(0, 80)})`,
        );
      const path = (req.url ?? '').split('?')[0];
      if (path !== '/mcp') return fail(res, 404, 'not found: the MCP endpoint is /mcp');
      const body = req.method === 'POST' ? await readJsonBody(req) : undefined;
      const sid = req.headers['mcp-session-id'];
      let transport = typeof sid === 'string' ? sessions.get(sid) : undefined;
      if (!transport) {
        if (typeof sid === 'string') return fail(res, 404, 'unknown session');
        if (req.method !== 'POST' || !isInitializeRequest(body))
          return fail(res, 400, 'no session: initialize first');
        const t = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          enableDnsRebindingProtection: true,
          allowedHosts: hosts(),
          allowedOrigins: origins(),
          // Resumable streams, as serve's /mcp: a call whose stream drops is resumed with Last-Event-ID.
          eventStore: new BoundedEventStore(),
          retryInterval: SERVED_RETRY_MS,
          onsessioninitialized: (id) => {
            sessions.set(id, t);
          },
        });
        t.onclose = () => {
          if (t.sessionId) sessions.delete(t.sessionId);
        };
        await createFlowMcpServer(flow, o).connect(t);
        transport = t;
      }
      await transport.handleRequest(req, res, body);
    } catch (e) {
      if (!res.headersSent) fail(res, (e as { status?: number }).status ?? 500, (e as Error).message);
    }
  });
  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(port, '127.0.0.1', () => resolve());
  });
  actualPort = (httpServer.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${actualPort}/mcp`,
    port: actualPort,
    close: async () => {
      await Promise.all([...sessions.values()].map((t) => t.close().catch(() => {})));
      sessions.clear();
      await new Promise<void>((r) => {
        httpServer.close(() => r());
        httpServer.closeAllConnections();
      });
    },
  };
}
