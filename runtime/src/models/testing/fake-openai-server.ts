/**
 * A fake OpenAI-compatible server for tests and offline demos: a real node:http server on
 * 127.0.0.1 speaking `POST /v1/chat/completions` (JSON and SSE streaming, streamed tool-call
 * deltas, usage), with a scriptable fault per request.
 *
 * Usage
 * ```ts
 * import { startFakeOpenAIServer } from '@switchboard/runtime/…/models/testing/fake-openai-server.js';
 * const fake = await startFakeOpenAIServer({
 *   replies: [
 *     // Canned replies keyed by request content, for running example flows against it:
 *     { when: { system: 'You are the planner' }, reply: { text: 'PLAN: write it' } },
 *     { when: { lastUser: 'weather', hasToolResult: false }, reply: { toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] } },
 *     { when: { hasToolResult: true }, reply: [{ text: 'first time' }, { text: 'later times' }] },
 *   ],
 * });
 * // point the openai provider at it: baseURL = fake.url (…/v1), loopback allowed.
 * fake.enqueue({ fault: 'status', status: 429, retryAfter: '0.5' }, { reply: { text: 'ok' } });
 * fake.requests;            // every request seen: parsed body, headers, what was served, whether the client hung up
 * await fake.close();
 * ```
 *
 * Which answer a request gets, in order:
 * 1. the next step of the queue (`enqueue`), if any — a fault or a reply, consumed once
 *    (a step with `times: n` serves n requests);
 * 2. the rate limiter (`rateLimit`): beyond `perSecond` requests in the current second → 429;
 * 3. the first canned reply whose `when` matches (all given conditions must hold; an array reply
 *    is served in order, its last element repeating);
 * 4. `fallback` (default: `echo: <last user message>`), so concurrent callers can check that each
 *    got its own answer.
 *
 * Faults (`{ fault: … }`): `status` (any status, optional `retryAfter` header text and body),
 * `reset` (socket destroyed before headers), `slowHeaders` (`delayMs`, then a normal answer or `answer`),
 * `hang` (never answers), `cutText` (stream some text, then destroy the socket), `cutToolArgs`
 * (stream part of a tool call's arguments, then destroy), `invalidSseJson`, `sseError` (an
 * `{"error":…}` event mid-stream), `noDone` (complete stream without `data: [DONE]`), `length`
 * (finish_reason `length`), `emptyChoices`, `huge` (`bytes` of text, default 5 MB), `malformed`
 * (200 with a non-JSON body), `badToolArgs` (a tool call whose arguments are not JSON), `empty`
 * (an empty reply), `endless` (a stream of deltas every `delayMs`, default 5, that never finishes;
 * without streaming, a JSON body that never ends), `refusal` (the model refuses: `message.refusal`).
 * A fault applies to streaming and non-streaming requests alike where it means
 * something for both.
 *
 * Run it by hand for a demo: `node dist/models/testing/fake-openai-server.js --port 8787
 * --replies replies.json` (the JSON file is `{ "replies": [...], "fallback": {...} }`).
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';

export interface FakeToolCall {
  name: string;
  /** An object is serialised; a string is sent verbatim (so it may be invalid JSON on purpose). */
  arguments: string | Record<string, unknown>;
  id?: string;
}

export interface FakeReply {
  text?: string;
  toolCalls?: FakeToolCall[];
  finishReason?: string;
  /** Characters per streamed text chunk (default 8). */
  chunkSize?: number;
  /** Milliseconds between streamed chunks (default: the server's `chunkDelayMs`). */
  chunkDelayMs?: number;
  /**
   * `minimal` streams each tool call as one delta without `index` and `type`, as some
   * compatible servers do; `openai` (default) streams name first, then argument pieces by index.
   */
  toolCallStyle?: 'openai' | 'minimal';
}

export type FakeFault =
  | { fault: 'status'; status: number; retryAfter?: string; retryAfterMs?: string; body?: string }
  | { fault: 'reset' }
  | { fault: 'slowHeaders'; delayMs: number; answer?: FakeReply }
  | { fault: 'hang' }
  | { fault: 'cutText'; text?: string }
  | { fault: 'cutToolArgs' }
  | { fault: 'invalidSseJson' }
  | { fault: 'sseError'; message?: string }
  | { fault: 'noDone'; answer?: FakeReply }
  | { fault: 'length'; text?: string }
  | { fault: 'emptyChoices' }
  | { fault: 'huge'; bytes?: number }
  | { fault: 'malformed' }
  | { fault: 'badToolArgs'; name?: string }
  | { fault: 'empty' }
  | { fault: 'endless'; delayMs?: number }
  | { fault: 'refusal'; message?: string };

export type FakeStep = (FakeFault | { reply: FakeReply }) & { times?: number };

export interface FakeMatch {
  /** Substring of the last user message. */
  lastUser?: string;
  /** Substring of the system prompt (identifies the agent). */
  system?: string;
  /** Substring of any message. */
  anyMessage?: string;
  /** Whether the conversation ends in tool results. */
  hasToolResult?: boolean;
  /** The request offers a tool of this name. */
  tool?: string;
  /** The request's `model`. */
  model?: string;
}

export interface CannedReply {
  when: FakeMatch;
  reply: FakeReply | FakeReply[];
}

export interface FakeServerOptions {
  replies?: CannedReply[];
  /** What a request that matches nothing gets; default echoes the last user message. */
  fallback?: FakeReply | ((body: ChatRequestBody) => FakeReply);
  /** Beyond `perSecond` requests within one second → 429 with `Retry-After: retryAfter` (default "1"). */
  rateLimit?: { perSecond: number; retryAfter?: string };
  /** When set, requests must carry `Authorization: Bearer <apiKey>` or get 401. */
  apiKey?: string;
  /** Milliseconds between streamed chunks (default 0). */
  chunkDelayMs?: number;
  /** Model name reported in answers (default: the requested model, or `fake-model`). */
  model?: string;
  port?: number;
}

export interface ChatRequestBody {
  model?: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  messages?: Array<{
    role: string;
    content?: unknown;
    tool_calls?: unknown[];
    tool_call_id?: string;
    name?: string;
  }>;
  tools?: Array<{ type: string; function: { name: string; description?: string; parameters?: unknown } }>;
  response_format?: unknown;
  [key: string]: unknown;
}

export interface RecordedRequest {
  index: number;
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: ChatRequestBody | undefined;
  /** What was served: a fault name, `rateLimited`, `reply`, `unauthorized`, `notFound`. */
  served: string;
  receivedAt: number;
  /** When the client's connection closed before our response finished (it hung up / aborted). */
  clientClosedAt?: number;
  finished: boolean;
}

export interface FakeOpenAIServer {
  /** Base URL for an OpenAI client, ending in `/v1`. */
  readonly url: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  /** Adds steps to the per-request queue (FIFO). */
  enqueue(...steps: FakeStep[]): void;
  /** Replaces the canned replies. */
  setReplies(replies: CannedReply[]): void;
  /** Steps not yet consumed. */
  pending(): number;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((p) => (p && typeof p === 'object' && 'text' in p ? String(p.text) : '')).join('');
  }
  return '';
}

function lastUser(body: ChatRequestBody): string {
  const users = (body.messages ?? []).filter((m) => m.role === 'user');
  return contentText(users[users.length - 1]?.content);
}

function matches(when: FakeMatch, body: ChatRequestBody): boolean {
  const messages = body.messages ?? [];
  if (when.lastUser !== undefined && !lastUser(body).includes(when.lastUser)) return false;
  if (when.system !== undefined) {
    const system = messages.filter((m) => m.role === 'system').map((m) => contentText(m.content));
    if (!system.some((s) => s.includes(when.system!))) return false;
  }
  if (
    when.anyMessage !== undefined &&
    !messages.some((m) => contentText(m.content).includes(when.anyMessage!))
  ) {
    return false;
  }
  if (
    when.hasToolResult !== undefined &&
    (messages[messages.length - 1]?.role === 'tool') !== when.hasToolResult
  ) {
    return false;
  }
  if (when.tool !== undefined && !(body.tools ?? []).some((t) => t.function?.name === when.tool))
    return false;
  if (when.model !== undefined && body.model !== when.model) return false;
  return true;
}

/** A deterministic token estimate: words and punctuation runs. */
export function countTokens(text: string): number {
  return (text.match(/\w+|[^\s\w]/g) ?? []).length;
}

/** Starts the server on 127.0.0.1 (port 0 unless given). */
export async function startFakeOpenAIServer(options: FakeServerOptions = {}): Promise<FakeOpenAIServer> {
  const queue: FakeStep[] = [];
  let replies = options.replies ?? [];
  const served = new Map<CannedReply, number>();
  const requests: RecordedRequest[] = [];
  let windowStart = 0;
  let windowCount = 0;
  const sockets = new Set<import('node:net').Socket>();
  const hanging = new Set<http.ServerResponse>();

  const fallback = (body: ChatRequestBody): FakeReply =>
    typeof options.fallback === 'function'
      ? options.fallback(body)
      : (options.fallback ?? { text: `echo: ${lastUser(body)}` });

  const nextStep = (): FakeStep | undefined => {
    const head = queue[0];
    if (!head) return undefined;
    if (head.times !== undefined && head.times > 1) {
      head.times--;
      return head;
    }
    return queue.shift();
  };

  const pickReply = (body: ChatRequestBody): FakeReply => {
    for (const canned of replies) {
      if (!matches(canned.when, body)) continue;
      if (!Array.isArray(canned.reply)) return canned.reply;
      const n = served.get(canned) ?? 0;
      served.set(canned, n + 1);
      return canned.reply[Math.min(n, canned.reply.length - 1)] ?? fallback(body);
    }
    return fallback(body);
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: ChatRequestBody | undefined;
      try {
        body = raw ? (JSON.parse(raw) as ChatRequestBody) : undefined;
      } catch {
        body = undefined;
      }
      const record: RecordedRequest = {
        index: requests.length,
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
        served: '',
        receivedAt: Date.now(),
        finished: false,
      };
      requests.push(record);
      res.on('close', () => {
        hanging.delete(res);
        if (!res.writableFinished) record.clientClosedAt = Date.now();
      });
      res.on('finish', () => {
        record.finished = true;
      });
      handle(req, res, record).catch(() => res.destroy());
    });
  });

  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse, record: RecordedRequest) {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && path === '/v1/models') {
      record.served = 'models';
      return json(res, 200, {
        object: 'list',
        data: [{ id: options.model ?? 'fake-model', object: 'model' }],
      });
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions') {
      record.served = 'notFound';
      return json(res, 404, { error: { message: `no route ${req.method} ${path}`, type: 'not_found' } });
    }
    if (options.apiKey && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      record.served = 'unauthorized';
      return json(res, 401, { error: { message: 'invalid api key', type: 'invalid_request_error' } });
    }
    const body = record.body;
    if (!body || !Array.isArray(body.messages)) {
      record.served = 'badRequest';
      return json(res, 400, {
        error: { message: 'messages must be an array', type: 'invalid_request_error' },
      });
    }

    const step = nextStep();
    if (!step && options.rateLimit) {
      const now = Date.now();
      if (now - windowStart >= 1000) {
        windowStart = now;
        windowCount = 0;
      }
      // Only accepted requests use up the window, as real limiters count work, not refusals.
      if (windowCount >= options.rateLimit.perSecond) {
        record.served = 'rateLimited';
        res.setHeader('retry-after', options.rateLimit.retryAfter ?? '1');
        return json(res, 429, { error: { message: 'rate limit exceeded', type: 'rate_limit_error' } });
      }
      windowCount++;
    }
    const stream = body.stream === true;
    const model = options.model ?? body.model ?? 'fake-model';
    const answer = new Answer(res, body, model, stream, options.chunkDelayMs ?? 0);

    if (!step || 'reply' in step) {
      record.served = 'reply';
      return answer.send(step && 'reply' in step ? step.reply : pickReply(body));
    }
    record.served = step.fault;
    switch (step.fault) {
      case 'status': {
        if (step.retryAfter !== undefined) res.setHeader('retry-after', step.retryAfter);
        if (step.retryAfterMs !== undefined) res.setHeader('retry-after-ms', step.retryAfterMs);
        const text =
          step.body ??
          JSON.stringify({ error: { message: `fake status ${step.status}`, type: 'server_error' } });
        res.writeHead(step.status, { 'content-type': 'application/json' });
        res.end(text);
        return;
      }
      case 'reset':
        req.socket.destroy();
        return;
      case 'slowHeaders':
        await sleep(step.delayMs);
        if (res.destroyed) return;
        return answer.send(step.answer ?? pickReply(body));
      case 'hang':
        hanging.add(res);
        return;
      case 'cutText': {
        const text = step.text ?? 'This answer will be cut off';
        if (!stream) {
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': '10000' });
          res.write(`{"id":"x","choices":[{"message":{"content":"${text}`);
          await sleep(20);
          req.socket.destroy();
          return;
        }
        answer.head();
        answer.event(answer.chunk({ role: 'assistant', content: '' }));
        for (const piece of split(text, 8)) answer.event(answer.chunk({ content: piece }));
        await sleep(20);
        req.socket.destroy();
        return;
      }
      case 'cutToolArgs': {
        answer.head();
        answer.event(
          answer.chunk({
            role: 'assistant',
            tool_calls: [
              { index: 0, id: 'call_cut', type: 'function', function: { name: 'lookup', arguments: '' } },
            ],
          }),
        );
        answer.event(answer.chunk({ tool_calls: [{ index: 0, function: { arguments: '{"query": "wea' } }] }));
        await sleep(20);
        req.socket.destroy();
        return;
      }
      case 'invalidSseJson':
        if (!stream) {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"id": "x", "choices": [ {');
          return;
        }
        answer.head();
        res.write('data: {"id":"x","choices":[{"index":0,"delta":{"content":\n\n');
        res.end();
        return;
      case 'sseError':
        if (!stream) {
          return json(res, 500, {
            error: { message: step.message ?? 'upstream failed', type: 'server_error' },
          });
        }
        answer.head();
        answer.event({
          error: { message: step.message ?? 'upstream failed', type: 'server_error', code: 'upstream' },
        });
        res.end();
        return;
      case 'noDone':
        return answer.send(step.answer ?? pickReply(body), { done: false });
      case 'length':
        return answer.send({ text: step.text ?? 'This is cut because of max_tok', finishReason: 'length' });
      case 'emptyChoices':
        if (!stream) return json(res, 200, { id: 'x', object: 'chat.completion', model, choices: [] });
        answer.head();
        answer.event({ id: 'x', object: 'chat.completion.chunk', model, choices: [] });
        answer.end();
        return;
      case 'huge': {
        const size = step.bytes ?? 5 * 1024 * 1024;
        return answer.send({ text: 'x'.repeat(size), chunkSize: 64 * 1024 });
      }
      case 'malformed':
        res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' });
        res.end(stream ? 'this is not server-sent events\n' : '<html><body>Bad gateway</body></html>');
        return;
      case 'endless': {
        const every = step.delayMs ?? 5;
        if (stream) answer.head();
        else {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.write(
            '{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"',
          );
        }
        while (!res.destroyed) {
          if (stream) answer.event(answer.chunk({ content: 'more ' }));
          else res.write('more ');
          await sleep(every);
        }
        return;
      }
      case 'refusal': {
        const text = step.message ?? 'I cannot help with that.';
        if (!stream)
          return json(res, 200, {
            id: 'x',
            object: 'chat.completion',
            model,
            choices: [
              {
                index: 0,
                message: { role: 'assistant', content: null, refusal: text },
                finish_reason: 'stop',
              },
            ],
          });
        answer.head();
        answer.event(answer.chunk({ role: 'assistant', refusal: text }));
        answer.event(answer.chunk({}, 'stop'));
        answer.end();
        return;
      }
      case 'badToolArgs':
        return answer.send({
          toolCalls: [{ name: step.name ?? 'lookup', arguments: '{"query": "weather", ' }],
        });
      case 'empty':
        return answer.send({ text: '' });
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    enqueue: (...steps) => {
      queue.push(...steps.map((s) => ({ ...s })));
    },
    setReplies: (next) => {
      replies = next;
      served.clear();
    },
    pending: () => queue.reduce((n, s) => n + (s.times ?? 1), 0),
    close: async () => {
      for (const res of hanging) res.destroy();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function json(res: http.ServerResponse, status: number, value: unknown) {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function split(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** Writes one answer, as a JSON completion or as an SSE stream of chunks. */
class Answer {
  private readonly id = `chatcmpl-${Math.random().toString(36).slice(2, 10)}`;
  private readonly created = Math.floor(Date.now() / 1000);
  constructor(
    private readonly res: http.ServerResponse,
    private readonly body: ChatRequestBody,
    private readonly model: string,
    private readonly stream: boolean,
    private readonly chunkDelayMs: number,
  ) {}

  head() {
    this.res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  }
  event(value: unknown) {
    if (!this.res.destroyed) this.res.write(`data: ${JSON.stringify(value)}\n\n`);
  }
  chunk(delta: Record<string, unknown>, finishReason: string | null = null) {
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [{ index: 0, delta, finish_reason: finishReason }],
    };
  }
  end(done = true) {
    if (this.res.destroyed) return;
    if (done) this.res.write('data: [DONE]\n\n');
    this.res.end();
  }

  private usage(reply: FakeReply) {
    const prompt = (this.body.messages ?? []).reduce(
      (n, m) => n + countTokens(contentText(m.content)) + 3,
      0,
    );
    const completion =
      countTokens(reply.text ?? '') +
      (reply.toolCalls ?? []).reduce((n, c) => n + countTokens(c.name) + countTokens(argsText(c)), 0);
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  }

  async send(reply: FakeReply, opts: { done?: boolean } = {}) {
    const calls = (reply.toolCalls ?? []).map((c, i) => ({
      id: c.id ?? `call_${i}_${this.id.slice(-6)}`,
      name: c.name,
      args: argsText(c),
    }));
    const finish = reply.finishReason ?? (calls.length > 0 ? 'tool_calls' : 'stop');
    const usage = this.usage(reply);
    if (!this.stream) {
      json(this.res, 200, {
        id: this.id,
        object: 'chat.completion',
        created: this.created,
        model: this.model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: reply.text ?? (calls.length > 0 ? null : ''),
              ...(calls.length > 0
                ? {
                    tool_calls: calls.map((c) => ({
                      id: c.id,
                      type: 'function',
                      function: { name: c.name, arguments: c.args },
                    })),
                  }
                : {}),
            },
            finish_reason: finish,
          },
        ],
        usage,
      });
      return;
    }
    const delay = reply.chunkDelayMs ?? this.chunkDelayMs;
    const pause = async () => {
      if (delay > 0) await sleep(delay);
    };
    this.head();
    this.event(this.chunk({ role: 'assistant', content: '' }));
    for (const piece of split(reply.text ?? '', reply.chunkSize ?? 8)) {
      await pause();
      if (this.res.destroyed) return;
      this.event(this.chunk({ content: piece }));
    }
    for (const [index, call] of calls.entries()) {
      await pause();
      if (reply.toolCallStyle === 'minimal') {
        this.event(
          this.chunk({ tool_calls: [{ id: call.id, function: { name: call.name, arguments: call.args } }] }),
        );
        continue;
      }
      this.event(
        this.chunk({
          tool_calls: [
            { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } },
          ],
        }),
      );
      for (const piece of split(call.args, 7)) {
        await pause();
        if (this.res.destroyed) return;
        this.event(this.chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
      }
    }
    this.event(this.chunk({}, finish));
    if (this.body.stream_options?.include_usage) {
      this.event({
        id: this.id,
        object: 'chat.completion.chunk',
        created: this.created,
        model: this.model,
        choices: [],
        usage,
      });
    }
    this.end(opts.done ?? true);
  }
}

function argsText(call: FakeToolCall): string {
  return typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
}

/** `node fake-openai-server.js [--port N] [--replies FILE]`: serve until interrupted. */
async function main(argv: string[]) {
  const arg = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const file = arg('--replies');
  const config = file
    ? (JSON.parse(readFileSync(file, 'utf8')) as Pick<FakeServerOptions, 'replies' | 'fallback'>)
    : {};
  const fake = await startFakeOpenAIServer({ ...config, port: Number(arg('--port') ?? 0) });
  process.stdout.write(`fake OpenAI-compatible server at ${fake.url}\n`);
  const stop = () => void fake.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(1);
  });
}
