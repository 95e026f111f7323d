/**
 * `/mcp` of `switchboard serve`: the stored flows as MCP tools over streamable HTTP, one tool per
 * flow (name from its id, description from the flow), so one server offers a team's flows to
 * any MCP client. The request gate (guard.ts) has already checked Host and the token; here every
 * request that carries an Origin, GET and DELETE included (they open and end sessions), must
 * come from an allowed one. A call starts a normal server run (source `mcp`, in the history like
 * any other) and follows it through its durable events. Streams are resumable (event-store.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Flow, RunEvent } from '@switchboard/schemas';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { RunCommand, RunResult } from '../engine/types.js';
import { BoundedEventStore, SERVED_RETRY_MS } from '../mcp/event-store.js';
import type { StartServedRun } from '../mcp/served-call.js';
import type { Store } from '../store/store.js';
import type { FlowRecords } from './flow-records.js';
import type { RunManager } from './run-manager.js';

/** In-process listeners of runs' durable events (the `/mcp` calls following their runs). */
export class RunWatchers {
  private readonly byRun = new Map<string, Set<(events: RunEvent[]) => void>>();

  add(runId: string, f: (events: RunEvent[]) => void): () => void {
    let set = this.byRun.get(runId);
    if (!set) {
      set = new Set();
      this.byRun.set(runId, set);
    }
    set.add(f);
    const mine = set;
    return () => {
      mine.delete(f);
      if (mine.size === 0 && this.byRun.get(runId) === mine) this.byRun.delete(runId);
    };
  }

  publish(runId: string, events: RunEvent[]): void {
    const set = this.byRun.get(runId);
    if (set) for (const f of set) f(events);
  }
}

export interface McpRouteDeps {
  store: Store;
  runs: RunManager;
  records: FlowRecords;
  watchers: RunWatchers;
  /** Writes what co-editors changed in a flow's room to the catalog before it runs. */
  settleFlow: (id: string) => Promise<void>;
  origins: () => Set<string>;
  /** MCP sessions kept at once (default 256); past it the least recently used is closed. */
  maxSessions?: number;
}

const MAX_SESSIONS = 256;

function refuse(reply: FastifyReply, status: number, message: string): FastifyReply {
  return reply
    .code(status)
    .header('content-type', 'application/json')
    .send({ jsonrpc: '2.0', error: { code: -32000, message }, id: null });
}

export function registerMcpRoute(app: FastifyInstance, d: McpRouteDeps): { close(): Promise<void> } {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  let sdk: Promise<{
    Transport: typeof StreamableHTTPServerTransport;
    isInitializeRequest: (v: unknown) => boolean;
    createFlowsMcpServer: typeof import('../mcp/flow-server.js').createFlowsMcpServer;
  }>;
  const loadSdk = () =>
    (sdk ??= Promise.all([
      import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
      import('@modelcontextprotocol/sdk/types.js'),
      import('../mcp/flow-server.js'),
    ]).then(([t, types, fs]) => ({
      Transport: t.StreamableHTTPServerTransport,
      isInitializeRequest: types.isInitializeRequest,
      createFlowsMcpServer: fs.createFlowsMcpServer,
    })));

  const start: StartServedRun = async (flow, input, hooks) => {
    await d.settleFlow(flow.id);
    const current = d.records.get(flow.id)?.flow ?? flow;
    const rec = await d.runs.start({ flow: current as Flow, input, source: 'mcp' });
    const runId = rec.id;
    let last = 0;
    const deliver = (events: RunEvent[]) => {
      for (const e of events)
        if (e.seq > last) {
          last = e.seq;
          hooks.onEvent(e);
        }
    };
    const off = d.watchers.add(runId, deliver);
    // What became durable before the watcher was added.
    deliver(d.store.readEvents(runId));
    const send = (cmd: RunCommand) => {
      try {
        // A run on a worker answers later: an end or a fault then is nothing to tell it either.
        d.runs.command(runId, cmd)?.catch(() => {});
      } catch {
        // The run is over: nothing to tell it.
      }
    };
    const onAbort = () => send({ type: 'cancel', reason: 'the MCP client cancelled the call' });
    if (hooks.signal.aborted) onAbort();
    else hooks.signal.addEventListener('abort', onAbort, { once: true });
    const result = d.runs.settled(runId).then((r): RunResult => {
      hooks.signal.removeEventListener('abort', onAbort);
      off();
      const status = r?.status;
      const out: RunResult = {
        runId,
        status:
          status === 'completed' || status === 'failed' || status === 'cancelled' ? status : 'interrupted',
      };
      if (r?.output !== undefined) out.output = r.output;
      if (r?.error) out.error = { code: r.error.code, message: r.error.message };
      return out;
    });
    return { runId, send, result };
  };

  const serverFor = async (): Promise<Server> => {
    const { createFlowsMcpServer } = await loadSdk();
    return createFlowsMcpServer({
      name: 'switchboard',
      list: async () => d.records.all().map((r) => r.flow as Flow),
      start,
    });
  };

  app.route({
    method: ['GET', 'POST', 'DELETE'],
    url: '/mcp',
    schema: { summary: 'The stored flows as MCP tools (streamable HTTP; token as for the API)' } as object,
    handler: async (req, reply) => {
      const origin = req.headers.origin;
      if (origin !== undefined && !d.origins().has(String(origin)))
        return refuse(reply, 403, 'cross-origin requests are not accepted');
      const { Transport, isInitializeRequest } = await loadSdk();
      const sid = req.headers['mcp-session-id'];
      let transport = typeof sid === 'string' ? sessions.get(sid) : undefined;
      if (transport && typeof sid === 'string') {
        // Map order is use order: the first entry is the least recently used session.
        sessions.delete(sid);
        sessions.set(sid, transport);
      }
      if (!transport) {
        if (typeof sid === 'string') return refuse(reply, 404, 'unknown session');
        if (req.method !== 'POST' || !isInitializeRequest(req.body))
          return refuse(reply, 400, 'no session: initialize first');
        // Clients that never end their session do not hold the limit: the least recently used goes.
        if (sessions.size >= (d.maxSessions ?? MAX_SESSIONS)) {
          const [oldest, t] = sessions.entries().next().value as [string, StreamableHTTPServerTransport];
          sessions.delete(oldest);
          await t.close().catch(() => {});
        }
        const t = new Transport({
          sessionIdGenerator: () => randomUUID(),
          // Resumable streams: a call whose stream drops is resumed with Last-Event-ID.
          eventStore: new BoundedEventStore(),
          retryInterval: SERVED_RETRY_MS,
          onsessioninitialized: (id) => {
            sessions.set(id, t);
          },
        });
        t.onclose = () => {
          if (t.sessionId) sessions.delete(t.sessionId);
        };
        await (await serverFor()).connect(t);
        transport = t;
      }
      reply.hijack();
      await transport.handleRequest(req.raw, reply.raw, req.body);
    },
  });

  return {
    async close() {
      await Promise.all([...sessions.values()].map((t) => t.close().catch(() => {})));
      sessions.clear();
    },
  };
}
