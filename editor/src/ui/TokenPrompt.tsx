/**
 * Shown instead of the editor when the server wants a token this editor does not have (or has
 * a stale one): what happened, and a form for the token or the address `switchboard serve`
 * printed. The token is checked against the server before the editor starts with it.
 */
import { type FormEvent, type ReactNode, useState } from 'react';
import type { ServerAccess } from '../model/api.js';
import { tokenFromInput } from '../model/token.js';

export type TokenReason = 'missing' | 'refused' | 'rate-limited';

// The server never refuses the right token: a 429 means this one is wrong too, and many wrong
// ones came lately (from this network or from everywhere).
const RATE_LIMITED =
  'The server did not accept this token, and has seen many wrong tokens lately. Paste the current token (the right one is accepted at once), or wait a minute before trying others.';

const WHY: Record<TokenReason, ReactNode> = {
  missing: (
    <>
      This Switchboard server needs its access token. <code>switchboard serve</code> printed an address with
      it (<code>…/?token=…</code>): open that address, or paste the token or the whole address here.
    </>
  ),
  refused: (
    <>
      The server did not accept the token this browser has (the server may have been restarted with a new
      one). Paste the current token, or the address <code>switchboard serve</code> printed.
    </>
  ),
  'rate-limited': RATE_LIMITED,
};

export interface TokenPromptProps {
  reason: TokenReason;
  /** Asks the server whether `token` is accepted. */
  check(token: string): Promise<ServerAccess>;
  /** Called with an accepted token. */
  onAccepted(token: string): void;
}

export function TokenPrompt({ reason, check, onAccepted }: TokenPromptProps) {
  const [text, setText] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  async function submit(e: FormEvent) {
    e.preventDefault();
    const token = tokenFromInput(text);
    if (!token) {
      setError('That is neither a token nor an address with ?token=… in it.');
      return;
    }
    setBusy(true);
    setError(undefined);
    const access = await check(token);
    setBusy(false);
    if (access === 'ok') onAccepted(token);
    else if (access === 'rate-limited') setError(RATE_LIMITED);
    else if (access === 'absent') setError('The server did not answer; is it still running?');
    else setError('The server did not accept this token.');
  }

  return (
    <main className="sb-token" data-testid="token-prompt" data-reason={reason}>
      <form className="sb-token-card" onSubmit={submit}>
        <h1>Switchboard</h1>
        <p data-testid="token-reason">{WHY[reason]}</p>
        <label htmlFor="sb-token-input">Token or address</label>
        <input
          id="sb-token-input"
          data-testid="token-input"
          type="password"
          autoComplete="off"
          spellCheck={false}
          value={text}
          onChange={(e) => setText(e.target.value)}
          // biome-ignore lint/a11y/noAutofocus: the form is the whole page; typing is all there is to do
          autoFocus
        />
        {error && (
          <p className="sb-token-error" role="alert" data-testid="token-error">
            {error}
          </p>
        )}
        <button type="submit" data-testid="token-submit" disabled={busy || !text.trim()}>
          {busy ? 'Checking…' : 'Open the editor'}
        </button>
      </form>
    </main>
  );
}
