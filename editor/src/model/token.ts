/**
 * The server's access token in the browser, as Jupyter does it: `switchboard serve` prints the
 * editor's address with `?token=…` once; the editor takes the token from the address on load,
 * keeps it in this browser's storage for this server's origin, and removes it from the address
 * bar at once, so it is neither bookmarked nor passed on with the flow link (`?flow=…`). An
 * older `#token=…` fragment is taken the same way. Requests carry it as
 * `Authorization: Bearer`, WebSockets as the `bearer.<token>` subprotocol (see api.ts).
 */
import type { KeyValueStorage } from './persist.js';

const KEY = 'switchboard:token';

/**
 * The token in an address (`?token=` first, then `#token=`) and the address without it (path,
 * the other query parameters and the rest of the fragment, kept in order).
 */
export function splitToken(href: string): { token?: string; rest: string } {
  const url = new URL(href);
  const hash = new URLSearchParams(url.hash.replace(/^#/, ''));
  const token = url.searchParams.get('token') || hash.get('token') || undefined;
  url.searchParams.delete('token');
  hash.delete('token');
  const search = url.searchParams.toString();
  const fragment = hash.toString();
  return { token, rest: `${url.pathname}${search ? `?${search}` : ''}${fragment ? `#${fragment}` : ''}` };
}

/**
 * What someone pasted into the token form: the token itself, or the whole address the server
 * printed. Surrounding spaces and quotes are dropped (copying from a terminal adds them).
 */
export function tokenFromInput(input: string): string | undefined {
  const text = input.trim().replace(/^["']|["']$/g, '');
  if (/^https?:\/\//i.test(text)) {
    try {
      return splitToken(text).token;
    } catch {
      return undefined;
    }
  }
  return /^[\x21-\x7e]+$/.test(text) ? text : undefined;
}

export class TokenStore {
  constructor(private readonly storage: KeyValueStorage | undefined) {}

  get(): string | undefined {
    try {
      return this.storage?.getItem(KEY) || undefined;
    } catch {
      return undefined;
    }
  }

  set(token: string): void {
    try {
      this.storage?.setItem(KEY, token);
    } catch {
      // Storage refused (private mode, quota): the token lasts until the page is closed.
    }
  }

  clear(): void {
    try {
      this.storage?.removeItem(KEY);
    } catch {
      // Nothing stored.
    }
  }
}

/**
 * Takes a token from the page's address into `store` and strips it from the address bar.
 * Returns the token to use: the one just given, else the one kept from before.
 */
export function adoptToken(
  store: TokenStore,
  loc: { href: string } = window.location,
  hist: Pick<History, 'replaceState' | 'state'> = window.history,
): string | undefined {
  const { token, rest } = splitToken(loc.href);
  if (token === undefined) return store.get();
  store.set(token);
  hist.replaceState(hist.state, '', rest);
  return token;
}
