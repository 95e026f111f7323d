/**
 * A real worker process for the scale-out tests: `worker-main.ts REDIS_URL DATA_DIR COUNTER_FILE
 * [CONCURRENCY]`, with the kill battery's counting tool (one line per execution). Prints
 * `READY <id>` once it takes runs; SIGTERM closes it gracefully.
 */
import { RunWorker } from '../../runtime/src/redis/worker.js';
import { countingTools } from '../crash/fixture.js';

const [url, dir, counter, concurrency] = process.argv.slice(2);
const w = new RunWorker({
  url: url!,
  dataDir: dir!,
  concurrency: Number(concurrency ?? 2),
  tools: countingTools(counter!, 10),
  timings: { lockMs: 2000, stalledMs: 1000, heartbeatMs: 500 },
  // Takeovers and lost runs, for the tests to count.
  logger: {
    info: (o, m) => process.stderr.write(`INFO ${m} ${JSON.stringify(o)}\n`),
    warn: (o, m) => process.stderr.write(`WARN ${m} ${JSON.stringify(o)}\n`),
    error: (o, m) => process.stderr.write(`ERROR ${m} ${JSON.stringify(o)}\n`),
  },
});
w.start();
process.stdout.write(`READY ${w.id}\n`);
process.on('SIGTERM', () => {
  void w.close(Number(process.env.GRACE_MS ?? 5000)).then(() => process.exit(0));
});
