/**
 * Resumable streams on `/mcp` of `switchboard serve` and of `switchboard mcp FLOW --http`
 * (MCP 2025-11-25, SEP-1699), over a real
 * socket with raw HTTP so every SSE field is seen: a call's stream opens with a priming event (an
 * id, `retry`, no data); when the client's stream drops mid-call the run goes on, and a GET with
 * `Last-Event-ID` replays what followed, the answer included, with nothing repeated. Clients of
 * older protocol versions get no priming event (they fail on empty data). The conformance suite's
 * server-sse-polling scenario checks the first part but, in 0.1.16, as a 2025-03-26 client (see
 * the `serve` section of test/mcp-conformance/expected-failures.yml).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { runFlow } from '../../runtime/src/engine/index.js';
import { serveFlowHttp } from '../../runtime/src/mcp/flow-server.js';
import { slowChain, testServer } from '../server/helpers.js';

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

interface SseEvent {
  id?: string;
  retry?: string;
  data: string;
}

/** Reads SSE events off a response body, one at a time. */
function sseReader(res: Response): { next(): Promise<SseEvent | undefined>; cancel(): Promise<void> } {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  return {
    async next() {
      for (;;) {
        const end = buf.indexOf('\n\n');
        if (end >= 0) {
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          const e: SseEvent = { data: '' };
          const data: string[] = [];
          for (const line of block.split('\n')) {
            const i = line.indexOf(':');
            if (i === 0) continue; // a comment (keep-alive)
            const field = i < 0 ? line : line.slice(0, i);
            const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
            if (field === 'id') e.id = value;
            else if (field === 'retry') e.retry = value;
            else if (field === 'data') data.push(value);
          }
          if (e.id === undefined && e.retry === undefined && data.length === 0) continue;
          e.data = data.join('\n');
          return e;
        }
        const { value, done } = await reader.read();
        if (done) return undefined;
        buf += value;
      }
    },
    cancel: () => reader.cancel(),
  };
}

async function session(base: string, version: string): Promise<Record<string, string>> {
  const init = await fetch(base, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  expect(init.status).toBe(200);
  const sid = init.headers.get('mcp-session-id')!;
  await init.text();
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-session-id': sid,
    'mcp-protocol-version': version,
  };
  const ack = await fetch(base, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  expect(ack.status).toBe(202);
  return headers;
}

function call(base: string, headers: Record<string, string>, signal?: AbortSignal): Promise<Response> {
  return fetch(base, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'slow', arguments: { input: 'x' }, _meta: { progressToken: 'p' } },
    }),
    ...(signal ? { signal } : {}),
  });
}

const isAnswer = (e: SseEvent) => e.data !== '' && (JSON.parse(e.data) as { id?: number }).id === 7;

// Six steps of 300 ms: the stream drops after the first progress and is resumed (after the
// 1 s `retry`) while the run still goes on, so the resumed stream carries replayed and live events.
const FLOW = () => slowChain('slow', 6, 300, 'the answer');

/** `switchboard serve` with the flow stored: its `/mcp` offers every stored flow. */
async function servedByServe(): Promise<string> {
  const s = await testServer({ port: 0 });
  close = () => s.close();
  const { port } = await s.listen();
  const r = await s.req({
    method: 'POST',
    url: '/api/flows',
    payload: JSON.stringify(FLOW()),
    headers: { host: `127.0.0.1:${port}`, 'content-type': 'application/json' },
  });
  expect(r.statusCode).toBe(201);
  return `http://127.0.0.1:${port}/mcp`;
}

/** `switchboard mcp FLOW --http`: the one flow as one tool (cli/commands/mcp.ts, in this process). */
async function servedByMcp(): Promise<string> {
  const served = await serveFlowHttp(FLOW(), { runFlow, runOptions: () => ({ humanInput: 'fail' }) }, 0);
  close = () => served.close();
  return `http://127.0.0.1:${served.port}/mcp`;
}

describe.each([
  ['switchboard serve', servedByServe],
  ['switchboard mcp --http', servedByMcp],
])('%s: resumable /mcp streams', { timeout: 60_000 }, (_name, served) => {
  it('primes each call stream, and a dropped call is resumed with Last-Event-ID, answer included', async () => {
    const base = await served();
    const headers = await session(base, '2025-11-25');
    const ac = new AbortController();
    const res = await call(base, headers, ac.signal);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const first = sseReader(res);
    const priming = await first.next();
    expect(priming).toMatchObject({ retry: '1000', data: '' });
    expect(priming?.id).toMatch(/^\d+$/);
    // Read up to the first progress notification, then drop the stream mid-call.
    const seen: SseEvent[] = [];
    for (;;) {
      const e = await first.next();
      expect(e, 'the stream ended before any progress').toBeDefined();
      expect(e!.id).toMatch(/^\d+$/);
      seen.push(e!);
      expect(isAnswer(e!)).toBe(false);
      if ((JSON.parse(e!.data) as { method?: string }).method === 'notifications/progress') break;
    }
    ac.abort();
    await first.cancel().catch(() => {});
    const lastId = seen.at(-1)!.id!;

    // As a client does: after the `retry` delay the stream announced, again (a few times) while
    // the server has not yet seen the old stream close (409).
    let resumed: Response | undefined;
    for (let attempt = 0; attempt < 5 && (!resumed || resumed.status === 409); attempt++) {
      await resumed?.text();
      await new Promise((r) => setTimeout(r, Number(priming!.retry)));
      resumed = await fetch(base, {
        headers: { ...headers, accept: 'text/event-stream', 'last-event-id': lastId },
      });
    }
    expect(resumed!.status).toBe(200);
    const rest = sseReader(resumed!);
    const after: SseEvent[] = [];
    for (;;) {
      const e = await rest.next();
      expect(e, 'the resumed stream ended without the answer').toBeDefined();
      after.push(e!);
      if (isAnswer(e!)) break;
    }
    await rest.cancel().catch(() => {});
    const ids = [...seen, ...after].map((e) => Number(e.id));
    // Every event once, in order, the replayed ones right after the last one seen.
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    expect(Number(after[0]!.id)).toBeGreaterThan(Number(lastId));
    const answer = JSON.parse(after.at(-1)!.data) as { result: { content: Array<{ text: string }> } };
    expect(answer.result.content.map((c) => c.text).join('')).toBe('the answer');
    expect(
      after.some((e) => (JSON.parse(e.data) as { method?: string }).method === 'notifications/progress'),
    ).toBe(true);
  });

  it('sends no priming event to a client older than 2025-11-25', async () => {
    const base = await served();
    const headers = await session(base, '2025-06-18');
    const r = sseReader(await call(base, headers));
    const e = await r.next();
    expect(e?.data).not.toBe('');
    expect(e?.retry).toBeUndefined();
    await r.cancel().catch(() => {});
  });

  it('refuses to resume from an event it does not keep', async () => {
    const base = await served();
    const headers = await session(base, '2025-11-25');
    const r = await fetch(base, {
      headers: { ...headers, accept: 'text/event-stream', 'last-event-id': '999999' },
    });
    expect(r.status).toBe(400);
    await r.text();
  });
});
