/**
 * The REST client used when the editor is served by `switchboard serve`. Every request carries
 * `Authorization: Bearer <token>` when a token was given in the URL fragment (`#token=…`), so the
 * token never reaches server logs or Referer headers. With no server the editor works offline.
 */
import type { Flow, Problem } from '@switchboard/schemas';

export interface FlowSummary {
  id: string;
  name?: string;
  description?: string;
}

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

/** Reads `token` from a URL fragment like `#token=abc&x=y`. */
export function tokenFromHash(hash: string): string | undefined {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const t = params.get('token');
  return t ? t : undefined;
}

export class FlowApi {
  constructor(
    private readonly base: string,
    private readonly token?: string,
    private readonly fetchFn: typeof fetch = (...a) => fetch(...a),
  ) {}

  private async request(method: string, path: string, body?: string): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    return this.fetchFn(new URL(path, this.base).toString(), { method, headers, body });
  }

  /** Whether a Switchboard server answers; false offline or when the page is a static build. */
  async available(): Promise<boolean> {
    try {
      const r = await this.request('GET', '/api/flows');
      if (!r.ok) return false;
      const type = r.headers.get('content-type') ?? '';
      if (!type.includes('json')) return false;
      const body = await r.json();
      return Array.isArray(body) || Array.isArray((body as { flows?: unknown }).flows);
    } catch {
      return false;
    }
  }

  async list(): Promise<FlowSummary[]> {
    const r = await this.request('GET', '/api/flows');
    if (!r.ok) throw new ApiError(`Listing flows failed: HTTP ${r.status}`, r.status);
    const body = (await r.json()) as unknown;
    const list = Array.isArray(body) ? body : ((body as { flows?: unknown[] }).flows ?? []);
    return list
      .filter((f): f is FlowSummary => !!f && typeof (f as FlowSummary).id === 'string')
      .map((f) => ({ id: f.id, name: f.name, description: f.description }));
  }

  /** The flow's text exactly as the server sent it. */
  async get(id: string): Promise<string> {
    const r = await this.request('GET', `/api/flows/${encodeURIComponent(id)}`);
    if (!r.ok) throw new ApiError(`Opening flow "${id}" failed: HTTP ${r.status}`, r.status);
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
    if (r.status === 401 || r.status === 403)
      message = 'Saving failed: the server wants a token (open the editor with #token=…)';
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
      const why =
        r.status === 401 ? 'the server wants a token (open the editor with #token=…)' : errorMessage(parsed);
      throw new ApiError(`${what} failed: ${why ?? `HTTP ${r.status}`}`, r.status, parsed);
    }
    return parsed as T;
  }

  /**
   * Starts a run of `flow` (sent whole, so unsaved edits run too) with `input`. `breakpoints`
   * are set before the first node starts.
   */
  async startRun(flow: Flow, input: string, breakpoints: string[] = []): Promise<RunSummary> {
    const body: Record<string, unknown> = { flow, input };
    if (breakpoints.length) body.breakpoints = breakpoints;
    const r = await this.call<{ run: RunSummary }>('POST', '/api/runs', 'Starting the run', body);
    return r.run;
  }

  async command(runId: string, cmd: RunCommandBody): Promise<void> {
    await this.call(
      'POST',
      `/api/runs/${encodeURIComponent(runId)}/commands`,
      `The ${cmd.type} command`,
      cmd,
    );
  }

  /** The newest runs of a flow, newest first. */
  async runsOf(flowId: string, limit = 1): Promise<RunSummary[]> {
    const q = new URLSearchParams({ flowId, limit: String(limit) });
    const r = await this.call<{ runs: RunSummary[] }>('GET', `/api/runs?${q}`, 'Listing runs');
    return r.runs;
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
    if (!r.ok && r.status !== 404)
      throw new ApiError(`Deleting flow "${id}" failed: HTTP ${r.status}`, r.status);
  }
}
