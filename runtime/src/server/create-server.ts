/**
 * The Switchboard server, built by a factory so tests drive it with `inject()` and real
 * sockets alike: the editor's static build, the REST API, WebSocket run events and Yjs rooms,
 * over one data directory.
 */
import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import fastifyWebsocket from '@fastify/websocket';
import type { RunEvent } from '@switchboard/schemas';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { McpAuthStore, mcpAuthDir } from '../mcp/oauth/store.js';
import { createGuardedFetch } from '../net/outbound.js';
import { loadRedisModule } from '../redis/packages.js';
import type { LogLine } from '../store/event-log.js';
import { isStorageFault, toStorageError } from '../store/storage-error.js';
import { lowSpaceFromEnv, type StorageHealthOptions } from '../store/storage-health.js';
import { Store } from '../store/store.js';
import { AttachedRuns, type AttachLimits } from './attach-host.js';
import { registerAttachRoute } from './attach-route.js';
import { defaultEditorDir } from './editor-dir.js';
import { installErrorHandling } from './errors.js';
import { EventHub, type HubOptions } from './event-hub.js';
import { deletedCloseReason, ROOM_DELETED_CLOSE } from './flow-lifecycle.js';
import { FlowRecords } from './flow-records.js';
import { defaultTemplatesDir, FlowTemplates } from './flow-templates.js';
import { installGuard } from './guard.js';
import { installJsonParser } from './json-body.js';
import { BODY_LIMIT, DEFAULT_MAX_RUNS, defaultMaxRuns, MAX_PARAM_LENGTH, WS_MAX_PAYLOAD } from './limits.js';
import { withRedaction } from './log-redaction.js';
import { RunWatchers, registerMcpRoute } from './mcp-route.js';
import { collectRoutes } from './openapi.js';
import { PinsStore } from './pins-store.js';
import { RoomPersistence } from './room-persistence.js';
import { RoomStates } from './room-states.js';
import { registerCassetteRoute } from './routes-cassette.js';
import { ID_PARAM, registerFlowRoutes } from './routes-flows.js';
import { registerMcpAuthRoutes } from './routes-mcp-auth.js';
import { registerPinRoutes, runPins } from './routes-pins.js';
import { registerRunRoutes } from './routes-runs.js';
import { FINAL, RunManager, type RunManagerOptions } from './run-manager.js';
import {
  type AuthLimits,
  allowedHostsFor,
  allowedOriginsFor,
  FailureLimiter,
  isLoopbackHost,
  tokenProblem,
  trustedProxies,
} from './security.js';
import { registerEditor } from './static-editor.js';
import { type RoomHooks, YjsRooms } from './yjs-room.js';

export const DEFAULT_PORT = 5170;
export const DEFAULT_HOST = '127.0.0.1';
/** A positive integer from a flag or variable, or a configuration error naming it. */
export function positiveInt(value: string | number, what: string): number {
  const n = typeof value === 'number' ? value : /^\d+$/.test(value.trim()) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 1)
    throw new ServerConfigError(
      `${what} must be a positive integer, not ${JSON.stringify(String(value)).slice(0, 40)}`,
    );
  return n;
}

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
  /**
   * Proxies whose `X-Forwarded-For` names the client (addresses, CIDRs, or `loopback`); default
   * none, so the header is ignored. Default SWITCHBOARD_TRUST_PROXY (comma-separated).
   */
  trustProxy?: string[];
  /** Failed-token limits (per address prefix and global, per window). */
  authLimits?: AuthLimits;
  /**
   * Runs live at once; a start beyond is refused with 429. Default SWITCHBOARD_MAX_RUNS, else 64
   * or what the open-files limit allows (`defaultMaxRuns`).
   */
  maxRuns?: number;
  /** The editor's build; default editor/dist of this checkout; false: no static files. */
  editorDir?: string | false;
  /** The shipped example flows offered as templates; default flows/ of this checkout; false: none. */
  templatesDir?: string | false;
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
  /** Low-space threshold and probe interval (default: SWITCHBOARD_LOW_SPACE_MB, 256 MiB; 1 s). */
  storage?: StorageHealthOptions;
  env?: NodeJS.ProcessEnv;
  /**
   * `--allow-outbound` values (loopback, private, HOST[:PORT], CIDR), added to
   * SWITCHBOARD_ALLOW_OUTBOUND: where model endpoints, MCP HTTP servers and the http built-in
   * may connect beyond public addresses.
   */
  allowOutbound?: string[];
  /** `--secrets-config FILE`, read after `DATA_DIR/secrets.json`. */
  secretsConfig?: string;
  /** `--allow-secret NAME=HOST[,HOST]` values. */
  allowSecrets?: string[];
  /** Headless runs attached over `/api/attach`: caps, rates, and how long a detached one waits. */
  attach?: Partial<AttachLimits>;
  /** MCP sessions of `/mcp` kept at once (default 256; the least recently used is closed past it). */
  mcpSessions?: number;
  /**
   * Scale-out (`--redis URL`, SWITCHBOARD_REDIS_URL): runs are enqueued on Redis for
   * `switchboard worker` processes instead of running here. Without it, nothing changes.
   */
  redis?: {
    url: string;
    prefix?: string;
    enqueueTimeoutMs?: number;
    /** Co-editing across instances: owner lock lifetime, poll period (tests shorten them). */
    rooms?: { lockMs?: number; tickMs?: number; compactAt?: number };
  };
}

export interface SwitchboardServer {
  app: FastifyInstance;
  store: Store;
  runs: RunManager;
  /** Runs hosted by headless processes (`switchboard run --attach`). */
  attached: AttachedRuns;
  hub: EventHub;
  rooms: YjsRooms;
  /** Saves rooms to the catalog and shows REST writes in open rooms. */
  roomStore: RoomPersistence;
  /** Scaled out: the relay sharing rooms with the other instances. */
  relay?: import('../redis/room-relay.js').RoomRelay;
  /** The editor build's routes served without a token (empty when there is no build). */
  editorRoutes: ReadonlySet<string>;
  /** Whether every route but the public ones needs the token. */
  tokenRequired: boolean;
  /** The concurrent run cap in force. */
  maxRuns: number;
  /** What recovery found at start. */
  recovered: { resumed: string[]; interrupted: string[]; final: string[]; paused: string[] };
  /**
   * Starts listening. `editor` is the address to open in a browser: with a token it carries
   * `?token=`, which the editor stores and removes from the address bar (print it once, to the
   * operator; never log it).
   */
  listen(): Promise<{ url: string; port: number; editor: string }>;
  close(): Promise<void>;
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

export { defaultEditorDir };

/** The operator's outbound destinations and secrets policy; a bad value is a ServerConfigError. */
async function operatorPolicy(options: ServerOptions, env: NodeJS.ProcessEnv, dataDir: string) {
  const { operatorOutboundEntries, outboundPolicyFrom } = await import('../net/destinations.js');
  const { loadSecretsPolicy } = await import('../net/secrets.js');
  try {
    return {
      outbound: outboundPolicyFrom(operatorOutboundEntries(options.allowOutbound, env)),
      secrets: loadSecretsPolicy({
        dataDir,
        ...(options.secretsConfig ? { configFile: options.secretsConfig } : {}),
        ...(options.allowSecrets ? { allow: options.allowSecrets } : {}),
      }),
    };
  } catch (e) {
    throw new ServerConfigError((e as Error).message);
  }
}

export class ServerConfigError extends Error {
  override readonly name = 'ServerConfigError';
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
  const proxies = trustedProxies(
    options.trustProxy ??
      env.SWITCHBOARD_TRUST_PROXY?.split(',')
        .map((p) => p.trim())
        .filter(Boolean) ??
      [],
  );
  if (typeof proxies === 'string') throw new ServerConfigError(proxies);
  const maxRuns =
    options.maxRuns !== undefined
      ? positiveInt(options.maxRuns, 'maxRuns')
      : env.SWITCHBOARD_MAX_RUNS
        ? positiveInt(env.SWITCHBOARD_MAX_RUNS, 'SWITCHBOARD_MAX_RUNS')
        : defaultMaxRuns();

  const ownStore = !options.store;
  const store =
    options.store ??
    (await Store.open(options.dataDir ?? env.SWITCHBOARD_DATA ?? './.switchboard', {
      // `os`: no per-turn fsync (survives kill -9, not a power loss).
      durability: options.durability ?? (env.SWITCHBOARD_DURABILITY === 'os' ? 'os' : 'fsync'),
      health: { lowSpaceBytes: lowSpaceFromEnv(env), ...options.storage },
    }));

  const app = Fastify({
    logger: withRedaction(options.logger ?? false),
    bodyLimit: BODY_LIMIT,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // X-Forwarded-For is read only from the proxies the operator named; req.ip is then the
    // nearest address no trusted proxy vouches for.
    trustProxy: proxies.length > 0 ? proxies : false,
    // Keep JSON bodies bounded; the parser below checks depth and prototype keys.
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    return503OnClosing: true,
    forceCloseConnections: true,
    requestTimeout: 60_000,
  });
  store.health.logger = app.log;
  void store.health.checkSpace();
  const openapi = collectRoutes(app);
  installErrorHandling(app);
  installJsonParser(app);
  const editorRoutes = new Set<string>();
  installGuard(app, {
    token,
    hosts: () => hosts,
    origins: () => origins,
    limiter: new FailureLimiter(options.authLimits),
    staticRoutes: editorRoutes,
  });

  // The operator's decisions, never a flow's: where runs may connect, which secrets go where.
  const { outbound, secrets } = await operatorPolicy(options, env, store.dir).catch(async (e: unknown) => {
    if (ownStore) await store.close();
    throw e;
  });

  // Tools go through the MCP host, which spawns a stdio server only after the local operator
  // approved that exact command line (`switchboard trust`); REST never approves anything.
  let tools = options.runs?.tools;
  if (!tools) {
    const { createMcpToolHost } = await import('../tools/mcp-host.js');
    const { quoteWord } = await import('../mcp/command-line.js');
    // A refusal names the command that approves the flow as stored here, on this machine.
    tools = ({ flow }) =>
      createMcpToolHost(flow, {
        env: env as Record<string, string | undefined>,
        flowRef: `--data ${quoteWord(store.dir)} ${quoteWord(flow.id)}`,
        outboundPolicy: outbound,
        secrets,
        storeDir: store.dir,
        mcpAuth: new McpAuthStore(mcpAuthDir(store.dir)),
      });
  }

  // Run events go to the hub once durable, so a client sees nothing that is not stored; to
  // provisional clients also once written (they learn of durability after).
  let hub!: EventHub;
  const watchers = new RunWatchers();
  const redisUrl = options.redis?.url ?? (env.SWITCHBOARD_REDIS_URL || undefined);
  const executor = redisUrl
    ? new (await loadRedisModule(() => import('../redis/queue-executor.js'))).QueueExecutor({
        url: redisUrl,
        ...(options.redis?.prefix ? { prefix: options.redis.prefix } : {}),
        ...(options.redis?.enqueueTimeoutMs ? { enqueueTimeoutMs: options.redis.enqueueTimeoutMs } : {}),
      })
    : undefined;
  const runs = new RunManager({
    outbound,
    secrets,
    ...options.runs,
    ...(executor ? { executor } : {}),
    tools,
    store,
    publish: (runId: string, events: RunEvent[], lines?: LogLine[]) => {
      watchers.publish(runId, events);
      return hub.publish(runId, events, lines);
    },
    // `/mcp` calls follow their runs as provisional clients do: progress is not an acknowledgement.
    publishWritten: (runId: string, events: RunEvent[], lines: LogLine[]) => {
      watchers.publish(runId, events);
      return hub.publishWritten(runId, events, lines);
    },
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
      ...(executor ? { arrived: (runId: string) => runs.arrived(runId) } : {}),
    },
    options.hub,
  );
  const records = new FlowRecords(store.catalog);
  // Scaled out, rooms are shared by every instance through Redis (redis/room-relay.ts).
  const relay = redisUrl
    ? new (await import('../redis/room-relay.js')).RoomRelay({
        url: redisUrl,
        prefix: options.redis?.prefix ?? 'sb',
        ...options.redis?.rooms,
        log: app.log,
      })
    : undefined;
  const roomStore = new RoomPersistence(
    records,
    relay?.history() ?? new RoomStates(join(store.dir, 'rooms'), store.fsync),
    app.log,
    store.health,
  );
  const rooms = new YjsRooms(
    relay ? relay.hooks(roomStore.hooks(options.rooms)) : roomStore.hooks(options.rooms),
  );
  roomStore.attach(rooms);
  relay?.attach(rooms);
  if (relay) roomStore.settleWith = (id) => relay.settle(id, (doc) => roomStore.settled(id, doc));
  const flowSync =
    relay && redisUrl
      ? new (await import('../redis/flow-sync.js')).FlowSync({
          url: redisUrl,
          prefix: options.redis?.prefix ?? 'sb',
          instance: relay.id,
          records,
          roomStore,
          owns: (id) => relay.owns(id),
          log: app.log,
        })
      : undefined;
  void flowSync?.start();

  // Headless runs streamed here: recorded like any run, hosted (and commanded) by their process.
  const attached = new AttachedRuns({
    store,
    log: app.log,
    limits: options.attach,
    publish: (runId, events, lines) => hub.publish(runId, events, lines),
    publishWritten: (runId, events, lines) => hub.publishWritten(runId, events, lines),
    // Created only under a free id no editor has open: an attacher never replaces a flow.
    storeFlow: async (flow, by) => {
      if (!records.isFree(flow.id) || roomStore.isOpen(flow.id)) return false;
      await records.put(flow, 'create', { by });
      return true;
    },
  });
  runs.attached = attached;

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

  // Public: liveness, and whether the data directory takes writes (degraded while they fail,
  // with the last storage error, its path relative to the data directory) and has room left.
  app.get('/api/health', { schema: { summary: 'Liveness and storage health (public)' } }, async () => {
    const storage = await store.health.snapshot();
    return {
      ok: true,
      status: storage.status,
      storage,
      ...(storage.lowSpace
        ? { warnings: [`storage_low: ${storage.freeBytes} bytes free, below ${storage.lowSpaceBytes}`] }
        : {}),
    };
  });
  app.get('/api/openapi.json', { schema: { summary: 'This API as OpenAPI 3.1' } }, async () => openapi());
  registerFlowRoutes(
    app,
    records,
    roomStore,
    new FlowTemplates(options.templatesDir === undefined ? defaultTemplatesDir() : options.templatesDir),
  );
  const pins = new PinsStore(join(store.dir, 'pins'));
  registerRunRoutes(
    app,
    store,
    runs,
    (id) => roomStore.settle(id),
    { maxRuns },
    (flow, fork) => runPins(flow, pins, fork, store),
  );
  registerPinRoutes(app, {
    store,
    records,
    pins,
    settleFlow: (id) => roomStore.settle(id),
    notify: (flowId, list) => hub.notifyFlow(flowId, { type: 'pins', flowId, pins: list }),
  });
  registerCassetteRoute(app, store);
  registerMcpAuthRoutes(app, {
    store: new McpAuthStore(mcpAuthDir(store.dir)),
    fetch: createGuardedFetch(outbound),
  });
  const mcp = registerMcpRoute(app, {
    store,
    runs,
    records,
    watchers,
    settleFlow: (id) => roomStore.settle(id),
    origins: () => origins,
    ...(options.mcpSessions ? { maxSessions: options.mcpSessions } : {}),
  });
  registerAttachRoute(app, attached);
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
          properties: { room: ID_PARAM },
        },
      },
    },
    (socket, req) => {
      // A deleted flow's room is never opened again: an editor still holding it would recreate it.
      const tomb = records.deleted(req.params.room);
      if (tomb) return void socket.close(ROOM_DELETED_CLOSE, deletedCloseReason(tomb));
      void rooms.attach(socket, req.params.room);
    },
  );

  const editorDir = options.editorDir === undefined ? defaultEditorDir() : options.editorDir;
  if (editorDir && existsSync(join(editorDir, 'index.html')))
    for (const r of await registerEditor(app, editorDir)) editorRoutes.add(r);

  if (options.maxRuns === undefined && !env.SWITCHBOARD_MAX_RUNS && maxRuns < DEFAULT_MAX_RUNS)
    app.log.warn(
      { maxRuns },
      `the open-files limit allows ${maxRuns} live runs at once, not ${DEFAULT_MAX_RUNS} (raise ulimit -n or set --max-runs)`,
    );
  if (options.recover !== false) attached.recover();
  const recovered =
    options.recover === false
      ? { resumed: [], interrupted: [], final: [], paused: [] }
      : await runs.recover();
  if (recovered.resumed.length || recovered.interrupted.length)
    app.log.warn(recovered, 'recovered runs left by the previous process');

  let closed = false;
  return {
    app,
    store,
    runs,
    attached,
    hub,
    rooms,
    roomStore,
    ...(relay ? { relay } : {}),
    editorRoutes,
    tokenRequired: token !== undefined,
    maxRuns,
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
      // Every step runs whatever the one before met (a data directory gone must not keep the
      // port open); what could not be saved is thrown at the end, named.
      const errors: unknown[] = [];
      const step = async (f: () => Promise<unknown>) => {
        try {
          const r = await f();
          if (Array.isArray(r)) errors.push(...r);
        } catch (e) {
          errors.push(e);
        }
      };
      hub.closeAll();
      await step(() => mcp.close());
      // Before the store closes: what the editors changed last is saved.
      await step(() => rooms.closeAll());
      if (relay) await step(() => relay.close());
      if (flowSync) await step(() => flowSync.close());
      await step(() => attached.closeAll());
      await step(() => runs.detachAll());
      await step(() => app.close());
      if (ownStore) await step(() => store.close());
      const first = errors[0];
      if (first !== undefined) {
        const e = isStorageFault(first) ? toStorageError(first) : (first as Error);
        throw Object.assign(e, { unsaved: errors.length });
      }
    },
  };
}
