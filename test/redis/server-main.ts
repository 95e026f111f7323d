/**
 * A real server instance for the scale-out tests: `server-main.ts REDIS_URL DATA_DIR`. Prints
 * `READY <port>` once it listens and follows every run.
 */
import { createServer } from '../../runtime/src/server/index.js';

const [url, dir] = process.argv.slice(2);
// Co-editing timings a test may shorten: {"rooms": RoomHooks subset, "relay": owner lock/poll}.
const timing = JSON.parse(process.env.SB_TEST_ROOMS ?? '{}') as {
  rooms?: { saveDelayMs?: number; saveMaxDelayMs?: number; idleMs?: number };
  relay?: { lockMs?: number; tickMs?: number; compactAt?: number };
};
const server = await createServer({
  dataDir: dir!,
  port: 0,
  editorDir: false,
  templatesDir: false,
  redis: { url: url!, ...(timing.relay ? { rooms: timing.relay } : {}) },
  ...(timing.rooms ? { rooms: timing.rooms } : {}),
});
const { port } = await server.listen();
process.stdout.write(`READY ${port} ${server.relay?.id ?? ''}\n`);
process.on('SIGTERM', () => {
  void server.close().then(() => process.exit(0));
});
