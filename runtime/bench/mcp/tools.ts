/**
 * Cost of a tool call through the MCP tool host: an in-process built-in (SDK in-memory
 * transport) and a stdio server (a child process), plus the time to spawn + initialize + list a
 * stdio server. Run: `npx tsx runtime/bench/mcp/tools.ts` (figures go to stdout; not part of the
 * test suite). Each figure is the median of 3 rounds after a warm-up.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Flow } from '@switchboard/schemas';
import { commandLineOf } from '../../src/mcp/command-line.js';
import { McpPool } from '../../src/mcp/pool.js';
import { TrustStore } from '../../src/mcp/trust.js';
import { createMcpToolHost } from '../../src/tools/mcp-host.js';
import type { ToolHandle, ToolHostContext } from '../../src/tools/types.js';

const N = 500;
const ECHO = fileURLToPath(new URL('../../src/mcp/testing/echo-server.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sb-bench-mcp-'));
const trust = new TrustStore(join(dir, 'trust.json'));
const stdioCfg = { command: process.execPath, args: [ECHO] };
trust.approve(commandLineOf(stdioCfg));

const at = { x: 0, y: 0 };
const flow: Flow = {
  version: 1,
  id: 'bench',
  name: 'bench',
  models: {},
  mcpServers: { st: { builtin: 'state' }, echo: stdioCfg },
  nodes: [
    { id: 'st', kind: 'tool', position: at, config: { server: 'st' } },
    { id: 'echo', kind: 'tool', position: at, config: { server: 'echo' } },
    { id: 'a', kind: 'agent', position: at, config: {} },
  ],
  edges: [
    { id: 'g1', kind: 'tools', source: 'st', target: 'a' },
    { id: 'g2', kind: 'tools', source: 'echo', target: 'a' },
  ],
};
const state: Record<string, unknown> = { k: 1 };
const ctx = (runId: string): ToolHostContext => ({
  runId,
  dataDir: join(dir, runId),
  signal: new AbortController().signal,
  state: {
    get: (k) => state[k],
    set: (k, v) => {
      state[k] = v;
    },
    snapshot: () => ({ ...state }),
  },
});
const signal = new AbortController().signal;

async function perCall(tool: ToolHandle, args: Record<string, unknown>): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const r = await tool.call(args, { signal });
    if (r.isError) throw new Error(r.content);
  }
  return ((performance.now() - t0) * 1000) / N;
}
const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const pool = new McpPool({ idleMs: 0 });
const host = createMcpToolHost(flow, { pool, trust });
const tools = await host.toolsFor('a', ctx('r1'));
const stateGet = tools.find((t) => t.name === 'st__state_get')!;
const echo = tools.find((t) => t.name === 'echo__echo')!;
const results: Record<string, string> = {};
for (const [name, tool, args] of [
  ['in-process built-in (state_get)', stateGet, { key: 'k' }],
  ['stdio server (echo)', echo, { text: 'hi' }],
] as const) {
  await perCall(tool, args);
  results[name] =
    `${median([await perCall(tool, args), await perCall(tool, args), await perCall(tool, args)]).toFixed(0)} µs/call`;
}
await host.release('r1');

const starts: number[] = [];
for (let i = 0; i < 4; i++) {
  const p = new McpPool({ idleMs: 0 });
  const h = createMcpToolHost(
    { ...flow, nodes: flow.nodes.filter((n) => n.id !== 'st'), edges: flow.edges.slice(1) },
    { pool: p, trust },
  );
  const t0 = performance.now();
  await h.toolsFor('a', ctx(`s${i}`));
  if (i > 0) starts.push(performance.now() - t0);
  await p.close();
}
results['stdio spawn + initialize + tools/list'] = `${median(starts).toFixed(0)} ms`;
await pool.close();
rmSync(dir, { recursive: true, force: true });
for (const [k, v] of Object.entries(results)) console.log(`${k.padEnd(40)} ${v}`);
