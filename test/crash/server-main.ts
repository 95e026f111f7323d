/**
 * A real server process for the kill battery: `server-main.ts DATA_DIR COUNTER_FILE`. Prints
 * `READY <port> <ms since start>` once it listens (after recovery).
 */
import { createServer } from '../../runtime/src/server/index.js';
import { countingTools } from './fixture.js';

const t0 = Date.now();
const [dir, counter] = process.argv.slice(2);
const server = await createServer({
  dataDir: dir!,
  port: 0,
  editorDir: false,
  runs: { tools: countingTools(counter!) },
});
const { port } = await server.listen();
process.stdout.write(`READY ${port} ${Date.now() - t0} ${JSON.stringify(server.recovered)}\n`);
process.on('SIGTERM', () => {
  void server.close().then(() => process.exit(0));
});
