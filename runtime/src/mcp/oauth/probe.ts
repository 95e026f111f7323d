/**
 * What the editor's chip says before anyone pressed Connect: whether the server holds a login
 * for an MCP server (`stored`), or whether that server turns away a caller without one
 * (`required`: it answers 401) or not (`open`). The probe is one JSON-RPC `ping` without
 * credentials through the server's guarded fetch, so a destination the operator did not allow
 * stays refused (`unknown`, with the reason). It never sends or reveals a stored token.
 */
import { errorText } from '../errors.js';
import type { McpAuthStore } from './store.js';

export type AuthNeed =
  | { auth: 'stored' }
  | { auth: 'required' }
  | { auth: 'open' }
  | { auth: 'unknown'; message: string };

export async function probeAuthNeed(
  serverUrl: string,
  store: McpAuthStore,
  fetchFn: typeof fetch,
  timeoutMs = 5_000,
): Promise<AuthNeed> {
  try {
    const entry = store.read(serverUrl);
    if (entry?.tokens?.access_token || entry?.grant === 'client_credentials') return { auth: 'stored' };
  } catch (e) {
    return { auth: 'unknown', message: errorText(e).slice(0, 300) };
  }
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), timeoutMs);
  try {
    const r = await fetchFn(serverUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'ping' }),
      signal: ctl.signal,
    });
    // Only the status matters; the body (perhaps an endless stream) is not read.
    void r.body?.cancel().catch(() => {});
    return r.status === 401 ? { auth: 'required' } : { auth: 'open' };
  } catch (e) {
    return {
      auth: 'unknown',
      message: ctl.signal.aborted ? `no answer within ${timeoutMs} ms` : errorText(e).slice(0, 300),
    };
  } finally {
    clearTimeout(timer);
  }
}
