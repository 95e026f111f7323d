/**
 * The one module that makes outbound HTTP. Model endpoints (the openai SDK's `fetch` option), MCP
 * HTTP servers (the MCP SDK transport's `fetch` option) and the `http` tool all go through
 * `outboundFetch` / `createGuardedFetch`; a static test (`no-direct-requests.test.ts`) fails when
 * any other runtime module makes requests itself.
 *
 * What it guarantees, per hop:
 * - only http: and https:, no credentials in the URL, the host on the allow-list when there is one;
 * - the host is resolved first and every address is checked (no loopback, private, link-local or
 *   reserved target unless the operator's policy allows that class);
 * - the connection goes to the address that was checked (we connect to the IP and send the
 *   original Host header and TLS server name), so a DNS answer that changes between check and
 *   connect (DNS rebinding) cannot redirect it;
 * - redirects are followed by hand and every hop is checked again;
 * - time to response headers is bounded (`timeoutMs`), body silence optionally (`idleTimeoutMs`),
 *   body size optionally (`maxResponseBytes`), and the AbortSignal destroys the socket.
 *
 * It returns a standard `Response`, so SDKs that accept a `fetch` work unchanged. Network failures
 * reject with `OutboundNetworkError` (a TypeError, as fetch does), policy refusals with
 * `OutboundBlockedError`; both carry a `code`.
 */
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { dict } from '@switchboard/schemas/core';
import {
  checkUrl,
  checkUrlStatic,
  type HostResolver,
  type OutboundPolicy,
  systemResolver,
} from './policy.js';
import { type BoundSecret, secretOutOfPlace } from './secret-scan.js';

export { type AddressClass, classifyAddress } from './ip.js';
export {
  type CheckResult,
  checkUrl,
  checkUrlStatic,
  type HostResolver,
  type OutboundPolicy,
} from './policy.js';
export { type BoundSecret, hostMatchesBinding } from './secret-scan.js';

export interface OutboundOptions {
  policy?: OutboundPolicy;
  /** Redirect hops followed (each re-checked). Default 5. */
  maxRedirects?: number;
  /** Milliseconds from sending a request to its response headers, per hop. Default 300 000. */
  timeoutMs?: number;
  /** Milliseconds the response body may stay silent before the stream fails. Default: unbounded. */
  idleTimeoutMs?: number;
  /** Largest (decoded) response body; more fails the body stream with ERR_RESPONSE_TOO_LARGE. */
  maxResponseBytes?: number;
  /** DNS resolution, injectable for tests (simulated answers, rebinding). */
  resolve?: HostResolver;
  /**
   * Secret values this request may carry and where each may go. Every hop (redirects too) is
   * refused when its URL, a header or the body holds one of them and its host is not one the
   * secret is bound to: the last line that keeps a key from reaching a host the operator did
   * not name, whatever path it took into the request.
   */
  secrets?: readonly BoundSecret[];
}

export type OutboundInit = RequestInit & OutboundOptions;

/** A URL without its query and fragment: enough to say where, never a key passed in a query. */
export function urlForMessage(url: string | URL): string {
  try {
    const u = typeof url === 'string' ? new URL(url) : url;
    return `${u.origin}${u.pathname}`;
  } catch {
    return String(url)
      .replace(/[?#].*$/s, '')
      .slice(0, 200);
  }
}

/**
 * The policy refused a URL (scheme, host, an address class or a secret the operator did not
 * allow there). Named `outbound_refused`: the operator's decision, so retrying cannot help.
 */
export class OutboundBlockedError extends Error {
  override readonly name = 'OutboundBlockedError';
  readonly code = 'outbound_refused';
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`outbound_refused: ${reason} — ${urlForMessage(url)}`);
  }
}

/** A network-level failure: connection refused/reset, timeout, too many redirects, body too large. */
export class OutboundNetworkError extends TypeError {
  override readonly name = 'OutboundNetworkError';
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const DEFAULT_TIMEOUT_MS = 300_000;
const DEFAULT_MAX_REDIRECTS = 5;
/** Errors that happen before a connection exists, so another address of the same host may work. */
const CONNECT_ERRORS = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'EAFNOSUPPORT',
]);
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const NULL_BODY = new Set([101, 204, 205, 304]);

// Keep-alive pools keyed (by Node) on the IP we connect to, the port and the TLS server name, so a
// pooled socket is only ever reused for the address that was checked for it.
const agents = {
  'http:': new http.Agent({ keepAlive: true }),
  'https:': new https.Agent({ keepAlive: true }),
};

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

interface Hop {
  url: URL;
  method: string;
  headers: Headers;
  body: Buffer | undefined;
}

/** Normalises fetch-style arguments into method, headers and a buffered body. */
async function firstHop(input: string | URL | Request, init: RequestInit): Promise<Hop> {
  // The common case (SDKs sending a string body or none) needs no Request round trip.
  if (
    !(input instanceof Request) &&
    (init.body === undefined || init.body === null || typeof init.body === 'string')
  ) {
    const headers = new Headers(init.headers);
    if (typeof init.body === 'string' && !headers.has('content-type')) {
      headers.set('content-type', 'text/plain;charset=UTF-8');
    }
    const method = (init.method ?? 'GET').toUpperCase();
    if (init.body != null && (method === 'GET' || method === 'HEAD')) {
      throw new TypeError('Request with GET/HEAD method cannot have body.');
    }
    return {
      url: new URL(input instanceof URL ? input.href : input),
      method,
      headers,
      body: typeof init.body === 'string' ? Buffer.from(init.body) : undefined,
    };
  }
  const request = new Request(input instanceof URL ? input.href : input, {
    method: init.method,
    headers: init.headers,
    body: init.body,
    // Needed by undici when the body is a stream; harmless otherwise.
    duplex: 'half',
  } as RequestInit);
  const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
  return { url: new URL(request.url), method: request.method, headers: new Headers(request.headers), body };
}

/** Sends one request to one checked address and resolves with the response head. */
function sendTo(
  hop: Hop,
  address: string,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<{ req: http.ClientRequest; res: http.IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const { url } = hop;
    const isIpHost = /^[\d.]+$/.test(url.hostname) || url.hostname.startsWith('[');
    const headers = dict<string | string[]>();
    hop.headers.forEach((value, name) => {
      headers[name] = value;
    });
    headers.host = url.host;
    if (!headers.accept) headers.accept = '*/*';
    if (hop.body) headers['content-length'] = String(hop.body.length);
    const options: https.RequestOptions = {
      protocol: url.protocol,
      hostname: address,
      port: url.port || (url.protocol === 'https:' ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      method: hop.method,
      headers,
      agent: agents[url.protocol as 'http:' | 'https:'],
      // TLS must verify the certificate against the name we were asked for, not the IP.
      ...(url.protocol === 'https:' && !isIpHost ? { servername: url.hostname.replace(/\.$/, '') } : {}),
    };
    const lib = url.protocol === 'https:' ? https : http;
    let settled = false;
    const req = lib.request(options);
    const finish = (err: unknown, res?: http.IncomingMessage) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (res) resolve({ req, res });
      else {
        req.destroy();
        reject(err);
      }
    };
    const timer = setTimeout(() => {
      finish(
        new OutboundNetworkError('ETIMEDOUT', `no response headers from ${url.host} within ${timeoutMs} ms`),
      );
    }, timeoutMs);
    const onAbort = () => finish(abortReason(signal!));
    signal?.addEventListener('abort', onAbort, { once: true });
    req.on('response', (res) => finish(undefined, res));
    req.on('error', (err: NodeJS.ErrnoException) => {
      finish(
        new OutboundNetworkError(err.code ?? 'ECONNECTION', `request to ${url.host} failed: ${err.message}`, {
          cause: err,
        }),
      );
    });
    req.end(hop.body);
  });
}

/** Tries each checked address in turn while the failure is "could not connect". */
async function sendHop(hop: Hop, addresses: string[], timeoutMs: number, signal: AbortSignal | undefined) {
  let lastError: unknown;
  for (const address of addresses) {
    try {
      return await sendTo(hop, address, timeoutMs, signal);
    } catch (err) {
      lastError = err;
      if (!(err instanceof OutboundNetworkError) || !CONNECT_ERRORS.has(err.code)) throw err;
    }
  }
  throw lastError;
}

/** The next hop of a redirect, following the fetch specification's method and header rules. */
function redirectHop(hop: Hop, status: number, location: string): Hop {
  let next: URL;
  try {
    next = new URL(location, hop.url);
  } catch {
    throw new OutboundNetworkError(
      'ERR_BAD_REDIRECT',
      `invalid redirect location: ${location.slice(0, 200)}`,
    );
  }
  const headers = new Headers(hop.headers);
  let { method, body } = hop;
  if (
    (status === 303 && method !== 'GET' && method !== 'HEAD') ||
    ((status === 301 || status === 302) && method === 'POST')
  ) {
    method = 'GET';
    body = undefined;
    for (const name of [
      'content-type',
      'content-length',
      'content-encoding',
      'content-language',
      'content-location',
    ]) {
      headers.delete(name);
    }
  }
  // Credentials stay with the origin they were meant for.
  if (next.origin !== hop.url.origin) {
    for (const name of ['authorization', 'cookie', 'proxy-authorization', 'api-key', 'x-api-key'])
      headers.delete(name);
  }
  return { url: next, method, headers, body };
}

/** Turns a Node response into a web stream with size, idle-time and abort bounds. */
function bodyStream(
  req: http.ClientRequest,
  res: http.IncomingMessage,
  options: OutboundOptions,
  signal: AbortSignal | undefined,
): ReadableStream<Uint8Array> {
  const encoding = String(res.headers['content-encoding'] ?? '').toLowerCase();
  let source: Readable = res;
  if (encoding === 'gzip' || encoding === 'x-gzip') source = res.pipe(zlib.createGunzip());
  else if (encoding === 'deflate') source = res.pipe(zlib.createInflate());
  else if (encoding === 'br') source = res.pipe(zlib.createBrotliDecompress());
  let received = 0;
  let idleTimer: NodeJS.Timeout | undefined;
  let done = false;
  let controllerRef: ReadableStreamDefaultController<Uint8Array> | undefined;

  const cleanup = () => {
    done = true;
    if (idleTimer) clearTimeout(idleTimer);
    signal?.removeEventListener('abort', onAbort);
  };
  const fail = (err: unknown) => {
    if (done) return;
    cleanup();
    controllerRef?.error(err);
    res.destroy();
    req.destroy();
  };
  const armIdle = () => {
    if (!options.idleTimeoutMs) return;
    if (idleTimer) clearTimeout(idleTimer);
    idleTimer = setTimeout(
      () =>
        fail(new OutboundNetworkError('ETIMEDOUT', `response body silent for ${options.idleTimeoutMs} ms`)),
      options.idleTimeoutMs,
    );
  };
  const onAbort = () => fail(abortReason(signal!));

  return new ReadableStream<Uint8Array>({
    start(controller) {
      controllerRef = controller;
      if (signal?.aborted) return fail(abortReason(signal));
      signal?.addEventListener('abort', onAbort, { once: true });
      armIdle();
      source.on('data', (chunk: Buffer) => {
        if (done) return;
        received += chunk.length;
        if (options.maxResponseBytes !== undefined && received > options.maxResponseBytes) {
          fail(
            new OutboundNetworkError(
              'ERR_RESPONSE_TOO_LARGE',
              `response body exceeds ${options.maxResponseBytes} bytes`,
            ),
          );
          return;
        }
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if ((controller.desiredSize ?? 1) <= 0) {
          // The reader is behind: its slowness is not the server's silence.
          source.pause();
          if (idleTimer) clearTimeout(idleTimer);
        } else armIdle();
      });
      source.on('end', () => {
        if (done) return;
        cleanup();
        controller.close();
      });
      const onError = (err: NodeJS.ErrnoException) =>
        fail(
          new OutboundNetworkError(err.code ?? 'ECONNRESET', `response body: ${err.message}`, { cause: err }),
        );
      source.on('error', onError);
      if (source !== res) res.on('error', onError);
      // A socket that closes before `end` is a truncated body, not a complete one.
      res.on('close', () => {
        if (!res.complete)
          fail(new OutboundNetworkError('ECONNRESET', 'response body ended early (connection closed)'));
      });
    },
    pull() {
      if (done) return;
      armIdle();
      source.resume();
    },
    cancel() {
      cleanup();
      res.destroy();
      req.destroy();
    },
  });
}

function bounded<T>(
  work: Promise<T>,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  host: string,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        done(() =>
          reject(new OutboundNetworkError('ETIMEDOUT', `resolving ${host} took over ${timeoutMs} ms`)),
        ),
      timeoutMs,
    );
    const onAbort = () => done(() => reject(abortReason(signal!)));
    const done = (settle: () => void) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      settle();
    };
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => done(() => resolve(value)),
      (err: unknown) => done(() => reject(err)),
    );
  });
}

/**
 * fetch, guarded: resolves and checks every hop against the policy, connects to the checked
 * address, follows redirects itself. See the module comment for the guarantees.
 */
export async function outboundFetch(
  input: string | URL | Request,
  init: OutboundInit = {},
): Promise<Response> {
  const signal = init.signal ?? (input instanceof Request ? input.signal : undefined) ?? undefined;
  if (signal?.aborted) throw abortReason(signal);
  const policy = init.policy ?? {};
  const resolve = init.resolve ?? systemResolver;
  const maxRedirects = init.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  const timeoutMs = init.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const redirectMode = init.redirect ?? (input instanceof Request ? input.redirect : 'follow');

  // Scheme, credentials and allow-list first: a refused URL never reaches the Request parser.
  const rawUrl = input instanceof Request ? input.url : input;
  const early = checkUrlStatic(rawUrl, policy);
  if (!early.ok) throw new OutboundBlockedError(String(rawUrl), early.reason);
  let hop = await firstHop(input, init);
  for (let redirects = 0; ; redirects++) {
    // DNS is bounded too: a resolver that never answers must not outlive the timeout or a cancel.
    const leaked = init.secrets?.length
      ? secretOutOfPlace(hop.url, hop.headers, hop.body, init.secrets)
      : undefined;
    if (leaked)
      throw new OutboundBlockedError(
        hop.url.href,
        `refused: the secret ${leaked} may not be sent to ${hop.url.host} (the operator binds it to other hosts)`,
      );
    const verdict = await bounded(checkUrl(hop.url, policy, resolve), timeoutMs, signal, hop.url.host);
    if (!verdict.ok) throw new OutboundBlockedError(hop.url.href, verdict.reason);
    if (signal?.aborted) throw abortReason(signal);
    const { req, res } = await sendHop(hop, verdict.addresses, timeoutMs, signal);
    const status = res.statusCode ?? 0;
    const location = res.headers.location;
    if (REDIRECTS.has(status) && location && redirectMode !== 'manual') {
      res.resume(); // drain, so the socket can return to the pool
      if (redirectMode === 'error') {
        throw new OutboundNetworkError('ERR_REDIRECT', `redirect to ${location} with redirect: "error"`);
      }
      if (redirects >= maxRedirects) {
        throw new OutboundNetworkError('ERR_TOO_MANY_REDIRECTS', `more than ${maxRedirects} redirects`);
      }
      hop = redirectHop(hop, status, location);
      continue;
    }
    const headers = new Headers();
    for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
      try {
        headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
      } catch {
        // A header value fetch would refuse: drop it rather than fail the response.
      }
    }
    const nullBody = NULL_BODY.has(status) || hop.method === 'HEAD';
    if (nullBody) res.resume();
    let response: Response;
    try {
      response = new Response(nullBody ? null : bodyStream(req, res, init, signal), {
        status,
        statusText: res.statusMessage ?? '',
        headers,
      });
    } catch (err) {
      res.destroy();
      throw new OutboundNetworkError('ERR_BAD_RESPONSE', `unusable response status ${status}`, {
        cause: err,
      });
    }
    Object.defineProperty(response, 'url', { value: hop.url.href });
    Object.defineProperty(response, 'redirected', { value: redirects > 0 });
    return response;
  }
}

/**
 * A `fetch` bound to a policy and bounds, for SDKs that take one: `new OpenAI({ fetch })`,
 * `new StreamableHTTPClientTransport(url, { fetch })`.
 */
export function createGuardedFetch(
  policy: OutboundPolicy = {},
  options: Omit<OutboundOptions, 'policy'> = {},
): typeof fetch {
  const guarded = (input: string | URL | Request, init?: RequestInit) =>
    outboundFetch(input, { ...options, ...init, policy });
  return guarded as typeof fetch;
}
