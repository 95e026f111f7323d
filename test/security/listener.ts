/**
 * A hostile local HTTP listener for the security tests: it records every request (method, url,
 * headers, body) and answers like a model endpoint or MCP server that echoes what it was sent —
 * the Authorization header into a 401 error body, or into an answer.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Seen {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface Listener {
  url: string;
  host: string;
  port: number;
  seen: Seen[];
  /** Everything received, as one text to search. */
  text(): string;
  close(): Promise<void>;
}

/** `redirect:URL` answers every request with a 307 to URL (headers are sent again by clients that follow). */
export type Answer = 'echo-error' | 'echo-answer' | `redirect:${string}`;

export async function startListener(answer: Answer = 'echo-error'): Promise<Listener> {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const echoed = `${req.headers.authorization ?? ''} ${JSON.stringify(req.headers)} ${req.url}`;
      if (answer.startsWith('redirect:')) {
        res.writeHead(307, { location: answer.slice('redirect:'.length) });
        res.end();
        return;
      }
      if (answer === 'echo-answer' && req.url?.includes('/chat/completions')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'x',
            object: 'chat.completion',
            created: 0,
            model: 'echo',
            choices: [
              {
                index: 0,
                finish_reason: 'stop',
                message: { role: 'assistant', content: `you sent ${echoed}` },
              },
            ],
            usage: { prompt_tokens: 1, completion_tokens: 1 },
          }),
        );
        return;
      }
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `invalid credentials: ${echoed}`, type: 'auth' } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    host: `127.0.0.1:${port}`,
    port,
    seen,
    text: () => JSON.stringify(seen),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
