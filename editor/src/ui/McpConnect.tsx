/**
 * "Connect" for an HTTP MCP server that needs OAuth (issue 19). The login runs on the server
 * and its tokens stay in the server's store, per operator: the editor only asks the server to
 * start it, opens the provider's page in a popup, and polls the status until it is connected.
 * Nothing token-like reaches the flow or this UI (the status routes never carry one).
 */
import { useCallback, useEffect, useRef, useState } from 'react';
import type { FlowApi, McpAuthStatus } from '../model/api.js';
import { useEditor } from './context.js';
import './McpConnect.css';

export type Chip = 'connected' | 'needs-sign-in' | 'signing-in' | 'no-sign-in' | 'unknown';

const CHIP_TEXT: Record<Chip, string> = {
  connected: 'connected',
  'needs-sign-in': 'needs sign-in',
  'signing-in': 'signing in…',
  'no-sign-in': 'no sign-in needed',
  unknown: 'unknown',
};

/** What the chip says for a status answer. */
export function chipOf(s: McpAuthStatus): Chip {
  if (s.state === 'connected' || s.auth === 'stored') return 'connected';
  if (s.state === 'pending') return 'signing-in';
  if (s.state === 'failed' || s.auth === 'required') return 'needs-sign-in';
  if (s.auth === 'open') return 'no-sign-in';
  return 'unknown';
}

/** How long Connect waits for the person to finish on the provider's page. */
const WAIT_MS = 5 * 60_000;
/** After the popup closes without a login, how long before saying so. */
const CLOSED_GRACE_MS = 10_000;
const POLL_MS = 500;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until the login is no longer pending; throws a sentence for the person on failure. */
async function waitConnected(
  api: FlowApi,
  url: string,
  popup: Window | null,
  alive: () => boolean,
): Promise<McpAuthStatus> {
  const deadline = Date.now() + WAIT_MS;
  let closedAt: number | undefined;
  while (alive()) {
    await sleep(POLL_MS);
    const s = await api.mcpAuthStatus(url);
    if (s.state === 'connected') return s;
    if (s.state === 'failed') throw new Error(`Sign-in failed: ${s.message ?? 'no reason given'}`);
    if (s.state === 'none') throw new Error('Sign-in failed: the server forgot the login (restarted?)');
    if (popup?.closed) closedAt ??= Date.now();
    if (closedAt !== undefined && Date.now() - closedAt > CLOSED_GRACE_MS)
      throw new Error('Sign-in not finished: the sign-in window was closed. Press Connect to try again.');
    if (Date.now() > deadline)
      throw new Error(`Sign-in not finished within ${WAIT_MS / 60_000} minutes. Press Connect to try again.`);
  }
  return { state: 'pending' };
}

/** The chip and Connect button of the HTTP MCP server `name` at `url`. */
export function McpConnect({ name, url }: { name: string; url: string }) {
  const { api } = useEditor();
  const [status, setStatus] = useState<McpAuthStatus | undefined>(undefined);
  const [error, setError] = useState('');
  const [link, setLink] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const mounted = useRef(true);
  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
    };
  }, []);

  // The URL may be mid-typing: ask once it has rested.
  useEffect(() => {
    if (!api || !URL.canParse(url)) {
      setStatus(undefined);
      return;
    }
    let live = true;
    const t = setTimeout(() => {
      api.mcpAuthStatus(url).then(
        (s) => live && setStatus(s),
        (e: unknown) => live && setStatus({ state: 'none', auth: 'unknown', message: String(e) }),
      );
    }, 400);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [api, url]);

  const connect = useCallback(async () => {
    if (!api) return;
    setError('');
    setLink(undefined);
    setBusy(true);
    // Opened now, in the click, so that no popup blocker refuses it; pointed at the provider
    // once the server has answered. No opener: the provider's page cannot reach this one.
    const popup = window.open('', 'switchboard-mcp-connect', 'popup,width=560,height=720');
    if (popup) popup.opener = null;
    try {
      const r = await api.mcpConnect(url);
      if (!mounted.current) return;
      if (!r.authorizationUrl) {
        popup?.close();
        // Failing before any sign-in page (unreachable, refused): the chip keeps what it knew.
        if (r.status.state === 'failed') throw new Error(`Sign-in failed: ${r.status.message ?? ''}`);
        setStatus(r.status);
        return;
      }
      setStatus(r.status);
      if (popup && !popup.closed) popup.location.href = r.authorizationUrl;
      else setLink(r.authorizationUrl);
      const done = await waitConnected(api, url, popup, () => mounted.current);
      if (!mounted.current) return;
      setStatus(done);
      setLink(undefined);
    } catch (e) {
      popup?.close();
      if (!mounted.current) return;
      setError(e instanceof Error ? e.message : String(e));
      setStatus((s) => (s?.state === 'pending' ? { state: 'failed' } : s));
    } finally {
      if (mounted.current) setBusy(false);
    }
  }, [api, url]);

  const chip: Chip = status ? chipOf(status) : 'unknown';
  const why = !api
    ? 'The editor is not connected to a Switchboard server'
    : status?.auth === 'unknown'
      ? `Could not ask the MCP server: ${status.message ?? ''}`
      : status?.auth === 'stored'
        ? 'A login is stored on the Switchboard server'
        : undefined;
  return (
    <div className="sb-mcp-auth" data-testid={`server-${name}-auth`}>
      <span className="sb-mcp-chip" data-testid={`server-${name}-auth-chip`} data-state={chip} title={why}>
        {CHIP_TEXT[chip]}
      </span>
      {api && chip !== 'connected' && chip !== 'no-sign-in' && (
        <button
          type="button"
          data-testid={`server-${name}-connect`}
          disabled={busy || !URL.canParse(url)}
          title="Sign in on the provider's page; the login is kept on the Switchboard server, never in the flow"
          onClick={() => void connect()}
        >
          {busy ? 'Connecting…' : 'Connect'}
        </button>
      )}
      {link && (
        <a
          className="sb-mcp-link"
          href={link}
          target="_blank"
          rel="noopener noreferrer"
          data-testid={`server-${name}-connect-link`}
        >
          The popup was blocked: open the sign-in page
        </a>
      )}
      {error && (
        <div className="sb-field-error" role="alert" data-testid={`server-${name}-connect-error`}>
          {error}
        </div>
      )}
    </div>
  );
}

/**
 * Under a run's `auth_required` error: names the server (the message starts with its name) and
 * says where to connect it.
 */
export function AuthRequiredHint({ message }: { message: string }) {
  const server = /^([A-Za-z0-9_.-]+): /.exec(message)?.[1];
  return (
    <div className="sb-run-hint" data-testid="run-auth-hint">
      {server ? `The MCP server "${server}" needs a sign-in.` : 'An MCP server needs a sign-in.'} Connect it
      in Flow settings (MCP servers → Connect); the login stays on the Switchboard server, never in the flow.
    </div>
  );
}
