/**
 * The Switchboard server, built by a factory so tests drive it with `inject()` and real
 * sockets alike: the editor's static build, the REST API, WebSocket run events and Yjs rooms,
 * over one data directory.
 */
import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyWebsocket from '@fastify/websocket';
import type { RunEvent } from '@switchboard/schemas';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { LogLine } from '../store/event-log.js';
import { Store } from '../store/store.js';
import { installErrorHandling } from './errors.js';
import { EventHub, type HubOptions } from './event-hub.js';
import { FlowRecords } from './flow-records.js';
import { installGuard } from './guard.js';
import { installJsonParser } from './json-body.js';
import { collectRoutes } from './openapi.js';
import { RoomPersistence } from './room-persistence.js';
import { RoomStates } from './room-states.js';
import { registerFlowRoutes } from './routes-flows.js';
import { registerRunRoutes } from './routes-runs.js';
import { FINAL, RunManager, type RunManagerOptions } from './run-manager.js';
import {
  allowedHostsFor,
  allowedOriginsFor,
  FailureLimiter,
  isLoopbackHost,
  tokenProblem,
} from './security.js';
import { registerEditor } from './static-editor.js';
import { type RoomHooks, YjsRooms } from './yjs-room.js';

export const DEFAULT_PORT = 5170;
export const DEFAULT_HOST = '127.0.0.1';
/** Request bodies: a flow may be 8 MiB (the validator's limit), plus an envelope. */
export const BODY_LIMIT = 9 * 1024 * 1024;
/** WebSocket messages: a few MiB, not ws's 100 MiB default. */
export const WS_MAX_PAYLOAD = 4 * 1024 * 1024;

export interface ServerOptions {
  /** The data directory, or an open store (the caller then closes it). */
  dataDir?: string;
  store?: Store;
  host?: string;
  port?: number;
  /** Required on non-loopback hosts; defaults to SWITCHBOARD_TOKEN. */
  token?: string;
  /** Extra Host header values (e.g. `switchboard.example:443`). */
  allowedHosts?: string[];
  /** Extra browser origins allowed to open WebSockets and send writes. */
  allowedOrigins?: string[];
  /** The editor's build; default editor/dist of this checkout; false: no static files. */
  editorDir?: string | false;
  /** fastify/pino logger option (false: silent). */
  logger?: FastifyServerOptions['logger'];
  hub?: HubOptions;
  /** Co-editing rooms: save delays and how long an empty room is kept (tests shorten them). */
  rooms?: Pick<RoomHooks, 'saveDelayMs' | 'saveMaxDelayMs' | 'idleMs' | 'limits'>;
  /** Passed to the run manager (engine, models, tools). */
  runs?: Omit<RunManagerOptions, 'store' | 'publish' | 'logger'>;
  /** `os`: no per-turn fsync (survives kill -9, not power loss). Default `fsync`. */
  durability?: 'fsync' | 'os';
  /** Resume runs the last process left running (default true). */
  recover?: boolean;
  env?: NodeJS.ProcessEnv;
}

export interface SwitchboardServer {
  app: FastifyInstance;
  store: Store;
  runs: RunManager;
  hub: EventHub;
  rooms: YjsRooms;
  /** Saves rooms to the catalog and shows REST writes in open rooms. */
  roomStore: RoomPersistence;
  /** The editor build's routes served without a token (empty when there is no build). */
  editorRoutes: ReadonlySet<string>;
  /** Whether every route but the public ones needs the token. */
  tokenRequired: boolean;
  /** What recovery found at start. */
  recovered: { resumed: string[]; interrupted: string[]; final: string[] };
  /**
   * Starts listening. `editor` is the address to open in a browser: with a token it carries
   * `?token=`, which the editor stores and removes from the address bar (print it once, to the
   * operator; never log it).
   */
  listen(): Promise<{ url: string; port: number; editor: string }>;
  close(): Promise<void>;
}

/** Tokens given as `?token=` (WebSocket upgrades) never reach the logs. */
export function redactUrl(url: string): string {
  return url.replace(/([?&]token=)[^&]*/gi, '$1[redacted]');
}

function withRedaction(logger: FastifyServerOptions['logger']): FastifyServerOptions['logger'] {
  if (!logger) return logger;
  const base = typeof logger === 'object' ? logger : {};
  return {
    ...base,
    serializers: {
      req: (req: { method: string; url: string; ip?: string }) => ({
        method: req.method,
        url: redactUrl(req.url),
        ip: req.ip,
      }),
    },
  } as FastifyServerOptions['logger'];
}

/**
 * Where a browser opens the editor: the first origin or Host the operator allowed (the name
 * people use, e.g. behind a proxy), else the address listened on; with a token, `?token=`.
 */
export function editorAddress(
  listenUrl: string,
  extraHosts: string[],
  extraOrigins: string[],
  token: string | undefined,
): string {
  const base =
    extraOrigins[0]?.replace(/\/+$/, '') ?? (extraHosts[0] ? `http://${extraHosts[0]}` : listenUrl);
  return token === undefined ? `${base}/` : `${base}/?token=${encodeURIComponent(token)}`;
}

export class ServerConfigError extends Error {
  override readonly name = 'ServerConfigError';
}

export function defaultEditorDir(): string {
  // Same depth from src/server and dist/server.
  return fileURLToPath(new URL('../../../editor/dist', import.meta.url));
}

export async function createServer(options: ServerOptions = {}): Promise<SwitchboardServer> {
  const env = options.env ?? process.env;
  const host = options.host ?? DEFAULT_HOST;
  let port = options.port ?? DEFAULT_PORT;
  const token = options.token ?? (env.SWITCHBOARD_TOKEN || undefined);
  if (!isLoopbackHost(host)) {
    const problem = tokenProblem(token);
    if (problem) throw new ServerConfigError(`refusing to listen on ${host}: ${problem}`);
  } else if (token !== undefined) {
    const problem = tokenProblem(token);
    if (problem) throw new ServerConfigError(problem);
  }
  const extraHosts = options.allowedHosts ?? env.SWITCHBOARD_ALLOWED_HOSTS?.split(',').filter(Boolean) ?? [];
  const extraOrigins =
    options.allowedOrigins ?? env.SWITCHBOARD_ALLOWED_ORIGINS?.split(',').filter(Boolean) ?? [];
  let hosts = allowedHostsFor(host, port, extraHosts);
  let origins = allowedOriginsFor(hosts, extraOrigins);

  const ownStore = !options.store;
  const store =
    options.store ??
    (await Store.open(options.dataDir ?? env.SWITCHBOARD_DATA ?? './.switchboard', {
      // `os`: no per-turn fsync (survives kill -9, not a power loss).
      durability: options.durability ?? (env.SWITCHBOARD_DURABILITY === 'os' ? 'os' : 'fsync'),
    }));

  const app = Fastify({
    logger: withRedaction(options.logger ?? false),
    bodyLimit: BODY_LIMIT,
    trustProxy: false,
    // Keep JSON bodies bounded; the parser below checks depth and prototype keys.
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    return503OnClosing: true,
    forceCloseConnections: true,
    requestTimeout: 60_000,
  });
  const openapi = collectRoutes(app);
  installErrorHandling(app);
  installJsonParser(app);
  const editorRoutes = new Set<string>();
  installGuard(app, {
    token,
    hosts: () => hosts,
    origins: () => origins,
    limiter: new FailureLimiter(),
    staticRoutes: editorRoutes,
  });

  // Tools go through the MCP host, which spawns a stdio server only after the local operator
  // approved that exact command line (`switchboard trust`); REST never approves anything.
  let tools = options.runs?.tools;
  if (!tools) {
    const { createMcpToolHost } = await import('../tools/mcp-host.js');
    tools = ({ flow }) => createMcpToolHost(flow, { env: env as Record<string, string | undefined> });
  }

  // Run events go to the hub once durable, so a client sees nothing that is not stored; to
  // provisional clients also once written (they learn of durability after).
  let hub!: EventHub;
  const runs = new RunManager({
    ...options.runs,
    tools,
    store,
    publish: (runId: string, events: RunEvent[], lines?: LogLine[]) => hub.publish(runId, events, lines),
    publishWritten: (runId: string, events: RunEvent[], lines: LogLine[]) =>
      hub.publishWritten(runId, events, lines),
    logger: app.log,
  });
  hub = new EventHub(
    {
      eventsAfter: (runId, after, limit, written) =>
        store.catalog.data.runs[runId] ? store.readEvents(runId, after, limit, written) : undefined,
      durableSeq: (runId) => store.durableSeq(runId),
      liveRunsOf: (flowId) =>
        Object.values(store.catalog.data.runs)
          .filter((r) => r.flowId === flowId && !FINAL.has(r.status))
          .map((r) => r.id),
      flowOf: (runId) => store.catalog.data.runs[runId]?.flowId,
    },
    options.hub,
  );
  const records = new FlowRecords(store.catalog);
  const roomStore = new RoomPersistence(
    records,
    new RoomStates(join(store.dir, 'rooms'), store.fsync),
    app.log,
  );
  const rooms = new YjsRooms(roomStore.hooks(options.rooms));
  roomStore.attach(rooms);

  await app.register(fastifyWebsocket, {
    options: {
      maxPayload: WS_MAX_PAYLOAD,
      perMessageDeflate: false,
      // Never echo a bearer token back as the selected subprotocol when another is offered.
      handleProtocols: (protocols: Set<string>) => {
        for (const p of protocols) if (!p.startsWith('bearer.')) return p;
        return [...protocols][0] ?? false;
      },
    },
  });

  app.get('/api/health', { schema: { summary: 'Liveness (public)' } }, async () => ({ ok: true }));
  app.get('/api/openapi.json', { schema: { summary: 'This API as OpenAPI 3.1' } }, async () => openapi());
  registerFlowRoutes(app, records, roomStore);
  registerRunRoutes(app, store, runs, (id) => roomStore.settle(id));
  app.get('/api/ws', { websocket: true, schema: { summary: 'Run events (WebSocket)' } }, (socket) => {
    hub.attach(socket);
  });
  app.get<{ Params: { room: string } }>(
    '/api/yjs/:room',
    {
      websocket: true,
      schema: {
        summary: 'Yjs collaboration room of a flow (WebSocket, y-protocols)',
        params: {
          type: 'object',
          properties: { room: { type: 'string', pattern: '^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$' } },
        },
      },
    },
    (socket, req) => {
      void rooms.attach(socket, req.params.room);
    },
  );

  const editorDir = options.editorDir === undefined ? defaultEditorDir() : options.editorDir;
  if (editorDir && existsSync(join(editorDir, 'index.html')))
    for (const r of await registerEditor(app, editorDir)) editorRoutes.add(r);

  const recovered =
    options.recover === false ? { resumed: [], interrupted: [], final: [] } : await runs.recover();
  if (recovered.resumed.length || recovered.interrupted.length)
    app.log.warn(recovered, 'recovered runs left by the previous process');

  let closed = false;
  return {
    app,
    store,
    runs,
    hub,
    rooms,
    roomStore,
    editorRoutes,
    tokenRequired: token !== undefined,
    recovered,
    async listen() {
      await app.listen({ host, port });
      const addr = app.server.address() as AddressInfo;
      port = addr.port;
      hosts = allowedHostsFor(host, port, extraHosts);
      origins = allowedOriginsFor(hosts, extraOrigins);
      const h = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      const url = `http://${h}:${port}`;
      return { url, port, editor: editorAddress(url, extraHosts, extraOrigins, token) };
    },
    async close() {
      if (closed) return;
      closed = true;
      hub.closeAll();
      // Before the store closes: what the editors changed last is saved.
      await rooms.closeAll();
      await runs.detachAll();
      await app.close();
      if (ownStore) await store.close();
    },
  };
}
