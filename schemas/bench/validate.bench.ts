/**
 * Benchmark: validating a flow of 5,000 nodes and 10,000 edges (`pnpm bench:validate`).
 * Reports the median of several runs after warm-up, for a parsed document (what the editor and
 * the API validate) and for its text (what the CLI reads: size and depth checks, UTF-8,
 * JSON.parse, then the same validation). Aim: under 100 ms for the document.
 *
 * The kinds come from `@switchboard/nodes` (through a relative import: the bench is a dev tool,
 * the `schemas` package itself imports nothing of ours).
 */
import { defaultRegistry } from '../../nodes/src/index.js';
import { serializeFlow, validateFlow, validateFlowText } from '../src/index.js';
import { bigFlow } from './big-flow.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const WARMUP = 3;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * Wall time and this process's CPU time per run. On a shared machine the wall time includes
 * waiting for a core; CPU time (user + system) is what the validator itself costs.
 */
function bench(name: string, fn: () => void): { wall: number; cpu: number } {
  for (let i = 0; i < WARMUP; i++) fn();
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const c0 = process.cpuUsage();
    const t = performance.now();
    fn();
    wall.push(performance.now() - t);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  const r = { wall: median(wall), cpu: median(cpu) };
  const f = (x: number) => x.toFixed(1).padStart(6);
  console.log(
    `${name.padEnd(36)} median wall ${f(r.wall)} ms  cpu ${f(r.cpu)} ms   (wall min ${f(Math.min(...wall))}, max ${f(Math.max(...wall))})`,
  );
  return r;
}

const flow = bigFlow(5000, 10000);
const text = serializeFlow(flow);
const bytes = new TextEncoder().encode(text);
const options = { kinds: defaultRegistry };
const check = validateFlow(flow, options);
if (!check.ok || check.warnings.length > 0) {
  console.error('the benchmark flow is not valid:', check.errors.slice(0, 5), check.warnings.slice(0, 5));
  process.exit(1);
}
console.log(
  `flow: ${flow.nodes.length} nodes, ${flow.edges.length} edges, ${(bytes.byteLength / 1024 / 1024).toFixed(1)} MiB as text; ${RUNS} runs after ${WARMUP} warm-up (Node ${process.version})`,
);
const doc = bench('validateFlow (parsed document)', () => validateFlow(flow, options));
bench('validateFlowText (UTF-8 bytes)', () => validateFlowText(bytes, options));
bench('  of which JSON.parse alone', () => JSON.parse(text));
// A broken copy: one bad config per node, so the error path (explanations, cap) is measured too.
const broken = structuredClone(flow);
for (const n of broken.nodes) if (n.kind === 'agent') n.config.memory = 'forever';
bench('validateFlow (5,000 errors, capped)', () => validateFlow(broken, options));
const [load1] = (await import('node:os')).loadavg();
console.log(`load average ${load1!.toFixed(1)} on ${(await import('node:os')).availableParallelism()} cores`);
if (doc.cpu > 100) {
  console.error(`median CPU time ${doc.cpu.toFixed(1)} ms is over the 100 ms aim`);
  process.exitCode = 1;
}
