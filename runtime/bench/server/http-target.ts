/**
 * A server process for the HTTP comparison: `http-target.ts fastify DIR` (the real server,
 * guard and all) or `http-target.ts bare` (node:http answering the same JSON). Prints its port.
 */
import { createServer as createHttpServer } from 'node:http';
import { createServer } from '../../src/server/index.js';

const [kind, dir] = process.argv.slice(2);
if (kind === 'bare') {
  const body = JSON.stringify({ ok: true });
  const srv = createHttpServer((req, res) => {
    if (req.url === '/api/health') {
      res.writeHead(200, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': body.length,
      });
      res.end(body);
    } else {
      res.writeHead(404).end();
    }
  });
  srv.listen(0, '127.0.0.1', () => {
    const a = srv.address();
    process.stdout.write(`PORT ${typeof a === 'object' && a ? a.port : 0}\n`);
  });
} else {
  const s = await createServer({ dataDir: dir!, port: 0, editorDir: false, logger: false });
  const { port } = await s.listen();
  process.stdout.write(`PORT ${port}\n`);
}
