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

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
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
      const body = (await r.json()) as { errors?: Problem[]; error?: string; message?: string };
      if (Array.isArray(body.errors)) errors = body.errors;
      const why = body.message ?? body.error;
      if (why) message = `Saving failed: ${why}`;
    } catch {
      // Not JSON: the status line says enough.
    }
    if (r.status === 401 || r.status === 403)
      message = 'Saving failed: the server wants a token (open the editor with #token=…)';
    return { ok: false, errors, message };
  }

  async remove(id: string): Promise<void> {
    const r = await this.request('DELETE', `/api/flows/${encodeURIComponent(id)}`);
    if (!r.ok && r.status !== 404)
      throw new ApiError(`Deleting flow "${id}" failed: HTTP ${r.status}`, r.status);
  }
}
