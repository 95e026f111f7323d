/**
 * Cost of the outbound guard per request, against Node's own fetch, on a local keep-alive server.
 * Run: `npx tsx runtime/bench/net/outbound.ts` (figures go to stdout; not part of the test suite).
 * Each configuration runs 3 times (after a warm-up); the median is reported.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { outboundFetch } from '../../src/net/outbound.js';

const N = 1_000;
const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"ok":true}');
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;

type Get = () => Promise<Response>;
const configs: Record<string, Get> = {
  'global fetch (undici)': () => fetch(url),
  outboundFetch: () => outboundFetch(url, { policy: { allowLoopback: true } }),
};

async function run(get: Get): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await (await get()).text();
  return ((performance.now() - t0) * 1000) / N;
}

const results: Record<string, number> = {};
for (const [name, get] of Object.entries(configs)) {
  await run(get); // warm-up
  const times = [await run(get), await run(get), await run(get)].sort((a, b) => a - b);
  results[name] = times[1]!;
}
server.closeAllConnections();
server.close();
const base = results['global fetch (undici)']!;
for (const [name, us] of Object.entries(results)) {
  console.log(`${name.padEnd(24)} ${us.toFixed(0).padStart(6)} µs/request  ${(us / base).toFixed(2)}x`);
}
