/**
 * The outbound module's last check on secrets: a request (each redirect hop) whose URL, headers
 * or body carries the value of a secret to a host that secret is not bound to. The policy that
 * binds secrets to hosts is `secrets.ts`; this file only matches values and hosts.
 */
import { normalizeHost } from './policy.js';

/**
 * Values shorter than this are not treated as secrets by this check and by redaction:
 * placeholder keys such as `ollama` or `EMPTY` would otherwise be found in ordinary text.
 */
export const MIN_SECRET_LENGTH = 8;

/** A value that may only be sent to some hosts (a resolved `${env:NAME}`), and its name for errors. */
export interface BoundSecret {
  name: string;
  value: string;
  /** Host patterns (`api.openai.com`, `*.example.com`, `host:port`) this value may go to. */
  hosts: readonly string[];
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The name of a secret this hop carries to a host it is not bound to, if any. */
export function secretOutOfPlace(
  url: URL,
  headers: Headers,
  body: Buffer | undefined,
  secrets: readonly BoundSecret[],
): string | undefined {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  let headerText: string | undefined;
  let bodyText: string | undefined;
  for (const s of secrets) {
    if (s.value.length < MIN_SECRET_LENGTH) continue; // too short to tell apart from ordinary text
    if (hostMatchesBinding(url.hostname, port, s.hosts)) continue;
    if (headerText === undefined) {
      const parts: string[] = [];
      headers.forEach((v) => {
        parts.push(v);
      });
      headerText = parts.join('\n');
    }
    bodyText ??= body ? body.toString('latin1') : '';
    const latin1 = Buffer.from(s.value, 'utf8').toString('latin1');
    if (url.href.includes(s.value) || safeDecode(url.href).includes(s.value)) return s.name;
    if (headerText.includes(s.value) || bodyText.includes(latin1)) return s.name;
  }
  return undefined;
}

/** Whether `host` (with `port`) matches one of the patterns a secret is bound to. */
export function hostMatchesBinding(hostname: string, port: string, patterns: readonly string[]): boolean {
  const host = normalizeHost(hostname);
  return patterns.some((raw) => {
    let pattern = raw.trim().toLowerCase();
    let wantPort: string | undefined;
    const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(pattern);
    if (m) {
      pattern = m[1]!;
      wantPort = m[2];
    }
    if (wantPort !== undefined && wantPort !== port) return false;
    pattern = normalizeHost(pattern);
    if (pattern.startsWith('*.')) return host.length > pattern.length - 1 && host.endsWith(pattern.slice(1));
    return host === pattern;
  });
}
