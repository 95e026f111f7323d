/**
 * A real worker process for the scale-out tests: `worker-main.ts REDIS_URL DATA_DIR COUNTER_FILE
 * [CONCURRENCY]`, with the kill battery's counting tool (one line per execution). Prints
 * `READY <id>` once it takes runs; SIGTERM closes it gracefully; SIGUSR2 blocks its event loop
 * for `STALL_MS` (a long GC, a frozen VM), past its job lock.
 */
import { RunWorker } from '../../runtime/src/redis/worker.js';
import { countingTools } from '../crash/fixture.js';

const [url, dir, counter, concurrency] = process.argv.slice(2);
const w = new RunWorker({
  url: url!,
  dataDir: dir!,
  concurrency: Number(concurrency ?? 2),
  tools: countingTools(counter!, 10),
  // Short locks for quick takeovers, unless the test is about the default lock.
  timings:
    process.env.WORKER_TIMINGS === 'default'
      ? { heartbeatMs: 500 }
      : { lockMs: 2000, stalledMs: 1000, heartbeatMs: 500 },
  // Takeovers and lost runs, for the tests to count.
  logger: {
    info: (o, m) => process.stderr.write(`INFO ${m} ${JSON.stringify(o)}\n`),
    warn: (o, m) => process.stderr.write(`WARN ${m} ${JSON.stringify(o)}\n`),
    error: (o, m) => process.stderr.write(`ERROR ${m} ${JSON.stringify(o)}\n`),
  },
});
w.start();
process.stdout.write(`READY ${w.id}\n`);
process.on('SIGUSR2', () => {
  const end = Date.now() + Number(process.env.STALL_MS ?? 6000);
  while (Date.now() < end) {
    // Busy: nothing else of this process runs (no lock renewal, no timer, no socket).
  }
  process.stderr.write('STALLED\n');
});
process.on('SIGTERM', () => {
  void w.close(Number(process.env.GRACE_MS ?? 5000)).then(() => process.exit(0));
});
