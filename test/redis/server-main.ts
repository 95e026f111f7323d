/**
 * A real server instance for the scale-out tests: `server-main.ts REDIS_URL DATA_DIR`. Prints
 * `READY <port>` once it listens and follows every run.
 */
import { createServer } from '../../runtime/src/server/index.js';

const [url, dir] = process.argv.slice(2);
const server = await createServer({
  dataDir: dir!,
  port: 0,
  editorDir: false,
  templatesDir: false,
  redis: { url: url! },
});
const { port } = await server.listen();
process.stdout.write(`READY ${port}\n`);
process.on('SIGTERM', () => {
  void server.close().then(() => process.exit(0));
});
