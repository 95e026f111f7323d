/**
 * The REST client used when the editor is served by `switchboard serve`. Every request carries
 * `Authorization: Bearer <token>` when the editor has the server's token (token.ts: taken from
 * the address the server printed, kept in this browser). With no server the editor works offline.
 */
import type { Flow, Pin, Problem, RunEvent } from '@switchboard/schemas';

export interface FlowSummary {
  id: string;
  name?: string;
  description?: string;
  rev?: number;
  nodes?: number;
  /** ISO time of the last change. */
  updatedAt?: string;
  /** Who made the last change (their display name, or `local user`). */
  updatedBy?: string;
}

/** The header that names this editor's person on writes (the server records it as the author). */
export const AUTHOR_HEADER = 'x-switchboard-user';

export type SaveResult = { ok: true } | { ok: false; errors: Problem[]; message: string };

/** What the server says about a run (`GET /api/runs/:id`, the answer to `POST /api/runs`). */
export interface RunSummary {
  id: string;
  flowId: string;
  status: string;
  createdAt: string;
  lastSeq: number;
  output?: unknown;
  error?: { code: string; message: string };
  scripted?: boolean;
  /** Present in lists and gets: when it last changed, when it ended, what it used. */
  updatedAt?: string;
  endedAt?: string;
  counters?: { turns: number; promptTokens: number; completionTokens: number; toolCalls: number };
  /** A process of this server hosts it (it can take commands). */
  live?: boolean;
  /** How it was started: `api` (REST, the editor), `cli`, `mcp`. */
  source?: string;
  /** Who started it, as they named themselves: untrusted display text, never a key. */
  startedBy?: string;
  /** Nodes it ran, in order (the first ones), and how many steps more it took. */
  path?: string[];
  pathMore?: number;
  /** Cost of its priced model calls (absent when no model of it has a price). */
  cost?: number;
  /** A fork: the run it started from, and at which node's turn. */
  parentRunId?: string;
  forkedAt?: { nodeId: string; turn: number };
  /** A headless run streamed here by `switchboard run --attach`: where from, and its link now. */
  attached?: AttachedLink;
}

/** `connected` takes commands; `detached` waits for its process; `abandoned`, `ended`: over. */
export interface AttachedLink {
  host: string;
  state: 'connected' | 'detached' | 'abandoned' | 'ended';
  since: string;
  flowKnown?: boolean;
}

/** A pin of a flow as the server lists it (`GET /api/flows/:id/pins`; see schemas/src/pins.ts). */
export interface PinView extends Pin {
  /** The node's config changed since the pinned run (the pin still applies). */
  stale: boolean;
  /** Why the pin cannot apply now (its edge or node is gone). */
  problem?: string;
}

/**
 * Where the server's login to an MCP server stands (`GET /api/mcp-auth/status`). With `none`
 * (nobody pressed Connect since the server started), `auth` says whether a login is stored,
 * the MCP server needs one, needs none, or could not be asked. Never a token.
 */
export interface McpAuthStatus {
  state: 'none' | 'pending' | 'connected' | 'failed';
  message?: string;
  auth?: 'stored' | 'required' | 'open' | 'unknown';
}

/** A command to a live run, as `POST /api/runs/:id/commands` takes it. */
export type RunCommandBody =
  | { type: 'pause' | 'resume' | 'step' }
  | { type: 'cancel'; reason?: string }
  | { type: 'inject'; text: string; nodeId?: string }
  | { type: 'answer'; answer: string; nodeId?: string }
  | { type: 'breakpoint'; nodeId: string; on: boolean };

/** The sentence an API error body carries: `{ error: { code, message } }` or older shapes. */
export function errorMessage(body: unknown): string | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const b = body as { error?: unknown; message?: unknown };
  if (b.error && typeof b.error === 'object') {
    const m = (b.error as { message?: unknown }).message;
    if (typeof m === 'string') return m;
  }
  if (typeof b.message === 'string') return b.message;
  if (typeof b.error === 'string') return b.error;
  return undefined;
}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    /** The parsed error body, when there was one (e.g. a validator's `errors`). */
    readonly body?: unknown,
  ) {
    super(message);
  }
}

/**
 * What answers at the editor's origin: a Switchboard server that accepts this editor (`ok`),
 * one that wants a (different) token (`unauthorized`; `rate-limited` after too many wrong
 * ones), or none (`absent`: offline, or a static build).
 */
export type ServerAccess = 'ok' | 'unauthorized' | 'rate-limited' | 'absent';

/** Said when a request is refused for its token while the editor is open. */
const TOKEN_REFUSED =
  'the server did not accept this editor’s token (reload the page to enter the current one)';

export class FlowApi {
  constructor(
    private readonly base: string,
    private readonly token?: string,
    private readonly fetchFn: typeof fetch = (...a) => fetch(...a),
    /** This editor's display name, sent with every request (URI-encoded: headers are Latin-1). */
    readonly author: () => string | undefined = () => undefined,
  ) {}

  private async request(method: string, path: string, body?: string): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    const author = this.author();
    if (author) headers[AUTHOR_HEADER] = encodeURIComponent(author);
    return this.fetchFn(new URL(path, this.base).toString(), { method, headers, body });
  }

  /** Who answers, and whether this editor's token is accepted (see `ServerAccess`). */
  async access(): Promise<ServerAccess> {
    try {
      const r = await this.request('GET', '/api/flows');
      const type = r.headers.get('content-type') ?? '';
      if (!type.includes('json')) return 'absent';
      const body = (await r.json()) as { flows?: unknown; error?: { code?: unknown } };
      // The server's own refusals, by their stable codes: not any 401 from anything else.
      if (r.status === 401 && body?.error?.code === 'unauthorized') return 'unauthorized';
      if (r.status === 429 && body?.error?.code === 'rate-limited') return 'rate-limited';
      if (!r.ok) return 'absent';
      return Array.isArray(body) || Array.isArray(body?.flows) ? 'ok' : 'absent';
    } catch {
      return 'absent';
    }
  }

  /** The server's `/api/health` answer (liveness and storage), or undefined when none came. */
  async health(): Promise<unknown> {
    const r = await this.request('GET', '/api/health');
    if (!(r.headers.get('content-type') ?? '').includes('json')) return undefined;
    return r.json();
  }

  /** Whether a Switchboard server answers and accepts this editor. */
  async available(): Promise<boolean> {
    return (await this.access()) === 'ok';
  }

  async list(): Promise<FlowSummary[]> {
    const r = await this.request('GET', '/api/flows');
    if (!r.ok) throw new ApiError(`Listing flows failed: HTTP ${r.status}`, r.status);
    const body = (await r.json()) as unknown;
    const list = Array.isArray(body) ? body : ((body as { flows?: unknown[] }).flows ?? []);
    return list
      .filter((f): f is FlowSummary => !!f && typeof (f as FlowSummary).id === 'string')
      .map((f) => ({
        id: f.id,
        name: f.name,
        description: f.description,
        rev: f.rev,
        nodes: f.nodes,
        updatedAt: f.updatedAt,
        updatedBy: f.updatedBy,
      }));
  }

  /** A new flow copied from a shipped example, with an id of its own; returns that id. */
  async fromTemplate(templateId: string, name?: string): Promise<string> {
    const r = await this.call<{ id: string }>(
      'POST',
      `/api/flows/from-template/${encodeURIComponent(templateId)}`,
      `Creating a flow from ${templateId}`,
      name ? { name } : undefined,
    );
    return r.id;
  }

  /** Stores `flow` as a new flow (refused when the id is taken: a copy never overwrites). */
  async create(flow: Flow): Promise<void> {
    await this.call('POST', '/api/flows', `Saving a copy as ${flow.id}`, flow);
  }

  /** The flow's text exactly as the server sent it. */
  async get(id: string): Promise<string> {
    const r = await this.request('GET', `/api/flows/${encodeURIComponent(id)}`);
    if (!r.ok) {
      const why = r.status === 401 ? TOKEN_REFUSED : errorMessage(await r.json().catch(() => undefined));
      throw new ApiError(`Opening flow "${id}" failed: ${why ?? `HTTP ${r.status}`}`, r.status);
    }
    return r.text();
  }

  /** Saves with PUT (creating it with POST when the server does not know the id yet). */
  async save(flow: Flow, text: string): Promise<SaveResult> {
    let r = await this.request('PUT', `/api/flows/${encodeURIComponent(flow.id)}`, text);
    if (r.status === 404) r = await this.request('POST', '/api/flows', text);
    if (r.ok) return { ok: true };
    let errors: Problem[] = [];
    let message = `Saving failed: HTTP ${r.status}`;
    try {
      const body = (await r.json()) as { errors?: Problem[] };
      if (Array.isArray(body.errors)) errors = body.errors;
      const why = errorMessage(body);
      if (why) message = `Saving failed: ${why}`;
    } catch {
      // Not JSON: the status line says enough.
    }
    if (r.status === 401) message = `Saving failed: ${TOKEN_REFUSED}`;
    return { ok: false, errors, message };
  }

  /** Sends a JSON body and returns the parsed answer, or throws with the server's sentence. */
  private async call<T>(method: string, path: string, what: string, body?: unknown): Promise<T> {
    const r = await this.request(method, path, body === undefined ? undefined : JSON.stringify(body));
    let parsed: unknown;
    try {
      parsed = await r.json();
    } catch {
      parsed = undefined;
    }
    if (!r.ok) {
      const why = r.status === 401 ? TOKEN_REFUSED : errorMessage(parsed);
      throw new ApiError(`${what} failed: ${why ?? `HTTP ${r.status}`}`, r.status, parsed);
    }
    return parsed as T;
  }

  /**
   * Starts a run of `flow` (sent whole, so unsaved edits run too) with `input`. `breakpoints`
   * are set before the first node starts.
   */
  /** Starts a run; with `fork`, from a past run's recorded state at a node's turn (its input unless given). */
  async startRun(
    flow: Flow,
    input: string | undefined,
    breakpoints: string[] = [],
    fork?: { fromRun: string; at: string },
  ): Promise<RunSummary> {
    const body: Record<string, unknown> = { flow };
    if (input !== undefined) body.input = input;
    if (fork) {
      body.fromRun = fork.fromRun;
      body.at = fork.at;
    }
    if (breakpoints.length) body.breakpoints = breakpoints;
    const r = await this.call<{ run: RunSummary }>('POST', '/api/runs', 'Starting the run', body);
    return r.run;
  }

  /** The flow's pins. */
  async pins(flowId: string): Promise<PinView[]> {
    const r = await this.call<{ pins: PinView[] }>(
      'GET',
      `/api/flows/${encodeURIComponent(flowId)}/pins`,
      'Reading the pins',
    );
    return r.pins;
  }

  /** Pins `nodeId`'s output from its turn `turn` (from 1) of run `fromRun`; the flow's pins after. */
  async pin(flowId: string, nodeId: string, fromRun: string, turn: number): Promise<PinView[]> {
    const r = await this.call<{ pins: PinView[] }>(
      'PUT',
      `/api/flows/${encodeURIComponent(flowId)}/pins/${encodeURIComponent(nodeId)}`,
      'Pinning the output',
      { fromRun, turn },
    );
    return r.pins;
  }

  async unpin(flowId: string, nodeId: string): Promise<PinView[]> {
    const r = await this.call<{ pins: PinView[] }>(
      'DELETE',
      `/api/flows/${encodeURIComponent(flowId)}/pins/${encodeURIComponent(nodeId)}`,
      'Unpinning',
    );
    return r.pins;
  }

  async command(runId: string, cmd: RunCommandBody): Promise<void> {
    await this.call(
      'POST',
      `/api/runs/${encodeURIComponent(runId)}/commands`,
      `The ${cmd.type} command`,
      cmd,
    );
  }

  /** One run as the server lists it. */
  async getRun(runId: string): Promise<RunSummary> {
    const r = await this.call<{ run: RunSummary }>(
      'GET',
      `/api/runs/${encodeURIComponent(runId)}`,
      'Reading the run',
    );
    return r.run;
  }

  /** A run's log (what is on the server's disk), read in pages from `after`. */
  async runEvents(runId: string, after = 0): Promise<RunEvent[]> {
    const out: RunEvent[] = [];
    for (;;) {
      const q = new URLSearchParams({ after: String(after), limit: '10000' });
      const r = await this.call<{ events: RunEvent[] }>(
        'GET',
        `/api/runs/${encodeURIComponent(runId)}/events?${q}`,
        'Reading the run',
      );
      for (const e of r.events) out.push(e);
      if (r.events.length < 10000) return out;
      after = r.events.at(-1)!.seq;
    }
  }

  async runsOf(flowId: string, limit = 1): Promise<RunSummary[]> {
    const q = new URLSearchParams({ flowId, limit: String(limit) });
    const r = await this.call<{ runs: RunSummary[] }>('GET', `/api/runs?${q}`, 'Listing runs');
    return r.runs;
  }

  /** Starts the server's login to the MCP server at `url`: the provider's page to open, if any. */
  async mcpConnect(url: string): Promise<{ authorizationUrl?: string; status: McpAuthStatus }> {
    return this.call('POST', '/api/mcp-auth/connect', 'Connecting the MCP server', { url });
  }

  async mcpAuthStatus(url: string): Promise<McpAuthStatus> {
    const q = new URLSearchParams({ url });
    return this.call('GET', `/api/mcp-auth/status?${q}`, 'Reading the sign-in status');
  }

  /** A WebSocket address on this server (`/api/ws`, `/api/yjs`), `ws:` or `wss:` as the page. */
  wsUrl(path: string): string {
    const u = new URL(path, this.base);
    u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
    return u.toString();
  }

  /**
   * Subprotocols for a WebSocket: browsers cannot set an Authorization header on an upgrade, so
   * the token travels as `bearer.<token>` (the server never selects that one as the protocol).
   */
  wsProtocols(): string[] {
    return this.token ? ['switchboard', `bearer.${this.token}`] : [];
  }

  async remove(id: string): Promise<void> {
    const r = await this.request('DELETE', `/api/flows/${encodeURIComponent(id)}`);
    // Already gone (404, or 410: deleted by someone else) is what was asked.
    if (!r.ok && r.status !== 404 && r.status !== 410) {
      const why = r.status === 401 ? TOKEN_REFUSED : errorMessage(await r.json().catch(() => undefined));
      throw new ApiError(`Deleting flow "${id}" failed: ${why ?? `HTTP ${r.status}`}`, r.status);
    }
  }
}
