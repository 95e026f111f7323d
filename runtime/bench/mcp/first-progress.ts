/**
 * Time to the first progress notification of a served flow, measured by the SDK's stock client
 * from the moment it sends `tools/call`: `switchboard mcp FLOW` over stdio (a child process) and
 * over streamable HTTP, and `/mcp` of `switchboard serve` (a server run: stored, fsynced). The
 * flow is start → writer (scripted, 20 ms) → end. The first call of each is reported apart (cold).
 *
 *   node --conditions=source --import tsx runtime/bench/mcp/first-progress.ts [REPS]
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Flow } from '@switchboard/schemas';
import { runFlow } from '../../src/engine/index.js';
import { serveFlowHttp } from '../../src/mcp/flow-server.js';
import { createServer } from '../../src/server/index.js';

const REPS = Number(process.argv[2] ?? 20);
const CLI_ENTRY = fileURLToPath(new URL('../../../test/fixtures/mcp/cli-entry.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sb-bench-first-progress-'));
const flow: Flow = {
  version: 1,
  id: 'bench-flow',
  name: 'Bench flow',
  models: { default: { provider: 'scripted', script: [{ node: 'writer', latencyMs: 20, text: 'done' }] } },
  nodes: [
    { id: 'start', kind: 'start', position: { x: 0, y: 0 }, config: {} },
    {
      id: 'writer',
      kind: 'agent',
      position: { x: 0, y: 0 },
      config: { role: 'writer', model: 'default', prompt: [{ text: 'Write about {{task}}' }] },
    },
    { id: 'end', kind: 'end', position: { x: 0, y: 0 }, config: {} },
  ],
  edges: [
    { id: 'e1', kind: 'handover', source: 'start', target: 'writer' },
    { id: 'e2', kind: 'handover', source: 'writer', target: 'end' },
  ],
};

async function measure(client: Client): Promise<{ first: number; all: number[] }> {
  const all: number[] = [];
  for (let i = 0; i <= REPS; i++) {
    let t = Number.NaN;
    const t0 = performance.now();
    await client.callTool({ name: 'bench-flow', arguments: { input: 'x' } }, undefined, {
      onprogress: () => {
        if (Number.isNaN(t)) t = performance.now() - t0;
      },
    });
    all.push(t);
  }
  return { first: all[0]!, all: all.slice(1) };
}

function report(name: string, r: { first: number; all: number[] }): void {
  const s = [...r.all].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!.toFixed(2);
  console.log(
    `${name.padEnd(28)} cold ${r.first.toFixed(2)} ms | warm (n=${s.length}) min ${s[0]!.toFixed(2)} p50 ${q(0.5)} p90 ${q(0.9)} ms`,
  );
}

try {
  const file = join(dir, 'flow.json');
  writeFileSync(file, JSON.stringify(flow));
  // stdio: the real CLI as a child.
  const stdio = new Client({ name: 'bench', version: '1' });
  await stdio.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ['--conditions=source', '--import', 'tsx', CLI_ENTRY, 'mcp', file],
      env: { PATH: process.env.PATH ?? '', HOME: dir, SWITCHBOARD_HOME: join(dir, 'home') },
      stderr: 'ignore',
    }),
  );
  report('mcp FLOW (stdio)', await measure(stdio));
  await stdio.close();

  // mcp --http, in process.
  const http = await serveFlowHttp(flow, { runFlow, runOptions: () => ({}) }, 0);
  const hc = new Client({ name: 'bench', version: '1' });
  await hc.connect(new StreamableHTTPClientTransport(new URL(http.url)));
  report('mcp FLOW --http', await measure(hc));
  await hc.close();
  await http.close();

  // serve /mcp: a stored flow, a recorded run.
  const server = await createServer({
    dataDir: join(dir, 'data'),
    port: 0,
    editorDir: false,
    templatesDir: false,
  });
  const { port } = await server.listen();
  const put = await server.app.inject({
    method: 'POST',
    url: '/api/flows',
    headers: { host: `127.0.0.1:${port}`, 'content-type': 'application/json' },
    payload: JSON.stringify(flow),
  });
  if (put.statusCode !== 201) throw new Error(`store: ${put.body}`);
  const sc = new Client({ name: 'bench', version: '1' });
  await sc.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
  report('serve /mcp (fsync)', await measure(sc));
  await sc.close();
  await server.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
