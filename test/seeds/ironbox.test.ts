/**
 * IronBox router (flows/ironbox.json): an LLM framework selector routes each query to the route
 * framework (a categorizer picking one specialist), a ReAct agent whose tools are discovered from
 * an MCP server's tools/list (plus a specialist agent as a tool), a plan-and-execute team, or a
 * direct answer. Every route is taken once, on scripted models and through the openai provider.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { Flow, RunEvent } from '@switchboard/schemas';
import { beforeAll, describe, expect, it } from 'vitest';
import { createBuiltinServer } from '../../runtime/src/mcp/builtin/index.js';
import {
  cannedReplies,
  expectRequestsMatch,
  handovers,
  ofType,
  openaiFlow,
  runSeed,
  type SeedRun,
  seedSuite,
  systemMarker,
  withFakeOpenAI,
} from './helpers.js';

const { flow, root } = seedSuite('ironbox');

interface Route {
  query: string;
  choice: string;
  path: string[];
  answer: RegExp;
}
const ROUTES: Route[] = [
  {
    query: 'Show me all the registered clusters',
    choice: 'to-route',
    path: ['query', 'to-route', 'to-info', 'route-done'],
    answer: /^Registered clusters: production/,
  },
  {
    query: 'Check how many pods are in the production cluster and which ones are not running',
    choice: 'to-react',
    path: ['query', 'to-react', 'react-done'],
    answer: /payments-7f9 is in CrashLoopBackOff/,
  },
  {
    query: 'Help me plan and execute migrating the workloads from staging to production',
    choice: 'to-plan',
    path: ['query', 'to-plan', 'planned', 'plan-done'],
    answer: /^Migration plan:/,
  },
  {
    query: 'What is a Kubernetes pod?',
    choice: 'to-direct',
    path: ['query', 'to-direct', 'direct-done'],
    answer: /smallest deployable unit/,
  },
];

/** The cluster inventory the tools read (cluster/ in the run's data directory). */
function seedCluster(dataDir: string): void {
  const put = (rel: string, value: unknown) => {
    mkdirSync(join(dataDir, 'cluster', rel, '..'), { recursive: true });
    writeFileSync(join(dataDir, 'cluster', rel), JSON.stringify(value, null, 2));
  };
  put('pods/production.json', [
    { name: 'web-1a2', status: 'Running' },
    { name: 'web-3c4', status: 'Running' },
    { name: 'worker-5d6', status: 'Running' },
    { name: 'payments-7f9', status: 'CrashLoopBackOff', restarts: 12 },
  ]);
  put('workloads/staging.json', [
    { name: 'web', cpu: 2 },
    { name: 'worker', cpu: 4 },
    { name: 'batch', cpu: 6 },
  ]);
  put('capacity/production.json', { freeCpu: 16 });
}

/** The flow with its selector script replaced by one choice (the rest of the script is shared). */
function choosing(choice: string): Flow {
  const copy = structuredClone(flow);
  copy.models.selector = {
    provider: 'scripted',
    script: [{ node: 'selector', json: { choice, reason: `the query fits ${choice}` } }],
  };
  return copy;
}

/** Names of the tools the `cluster` server lists, asked over MCP the way the tool host asks. */
let listed: string[] = [];
beforeAll(async () => {
  const dataDir = root.sub('list');
  const cfg = flow.mcpServers!.cluster as { builtin: string; options: Record<string, unknown> };
  const server = createBuiltinServer(cfg.builtin, { dataDir, options: cfg.options });
  const client = new Client({ name: 'seed-test', version: '1.0.0' });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(b);
  await client.connect(a);
  listed = (await client.listTools()).tools.map((t) => t.name).sort();
  await client.close();
  await server.close();
});

function checkRoute(run: SeedRun, r: Route): void {
  const { events, result, requests } = run;
  expect(result.status, JSON.stringify(result.error)).toBe('completed');
  expect(String(result.output)).toMatch(r.answer);
  expect(handovers(events)).toEqual(r.path);
  expect(ofType(events, 'decision', 'selector')).toMatchObject([{ choice: r.choice }]);
  // The selector was offered all four frameworks with their descriptions.
  const sel = requests.find((q) => q.nodeId === 'selector')!.messages[0]!.content;
  for (const e of ['to-route', 'to-react', 'to-plan', 'to-direct']) expect(sel).toContain(`"${e}"`);
  expect(sel).toContain('Plan-and-execute framework: complex multi-step problems');
  expect(ofType(events, 'tool.denied')).toEqual([]);
  if (r.choice === 'to-route')
    expect(ofType(events, 'decision', 'categorize')).toMatchObject([{ choice: 'to-info' }]);
  if (r.choice === 'to-react') {
    // Tools discovered from the server's tools/list (minus the node's exclude), plus the agent-as-tool.
    const offered = requests.find((q) => q.nodeId === 'react')!.tools.sort();
    const expected = listed.filter((t) => t !== 'write_file').map((t) => `cluster-tools__${t}`);
    expect(listed).toEqual(['list_directory', 'read_file', 'search_files', 'write_file']);
    expect(offered).toEqual(['agent_cluster_health', ...expected].sort());
    const results = ofType(events, 'tool.result', 'react');
    expect(results.map((x) => x.tool)).toEqual([
      'cluster-tools__list_directory',
      'cluster-tools__read_file',
      'agent_cluster_health',
    ]);
    expect(results.every((x) => x.isError === false)).toBe(true);
    expect(String(results[1]!.result)).toContain('CrashLoopBackOff');
    // The health agent ran as a nested run for the ReAct agent.
    expect(ofType(events, 'message', 'cluster-health')[0]!.parentRunId).toBe(events[0]!.runId);
  }
  if (r.choice === 'to-plan') {
    const plan = ofType(events, 'message', 'planner')[0]!;
    expect(JSON.parse((plan.message as { content: string }).content).steps).toHaveLength(3);
    // The executor read the inventory with the same discovered tools.
    expect(requests.find((q) => q.nodeId === 'executor')!.tools.sort()).toEqual(
      listed.filter((t) => t !== 'write_file').map((t) => `cluster-tools__${t}`),
    );
    expect(ofType(events, 'tool.result', 'executor').every((x) => x.isError === false)).toBe(true);
  }
  if (r.choice === 'to-direct') {
    expect(requests.find((q) => q.nodeId === 'direct')!.tools).toEqual([]);
    expect(ofType(events, 'tool.called')).toEqual([]);
  }
}

describe('IronBox router', () => {
  it.each(ROUTES)('scripted: $choice is reachable ($query)', async (r) => {
    const dataDir = root.sub(r.choice);
    seedCluster(dataDir);
    const run = await runSeed(choosing(r.choice), r.query, { dataDir });
    checkRoute(run, r);
    expect(run.events.every((e) => e.scripted === true)).toBe(true);
  });

  it('runs every route against an OpenAI-compatible server; the selector answers by the query', async () => {
    // The fake server picks the selector's answer from the query text, as a real model would.
    const selector = systemMarker(flow, 'selector');
    const byQuery = ROUTES.map((r) => ({
      when: { system: selector, lastUser: r.query },
      reply: { text: JSON.stringify({ choice: r.choice, reason: `fits ${r.choice}` }) },
    }));
    await withFakeOpenAI(cannedReplies(flow, byQuery), async (fake) => {
      const logs: RunEvent[][] = [];
      for (const r of ROUTES) {
        const dataDir = root.sub(`openai-${r.choice}`);
        seedCluster(dataDir);
        const run = await runSeed(openaiFlow(flow, fake.url), r.query, { dataDir, allowLocalModels: true });
        logs.push(run.events);
        checkRoute(run, r);
        expect(run.events.some((e) => e.scripted)).toBe(false);
      }
      // Discovered MCP tools went to the model as OpenAI function tools.
      const react = fake.requests.find((q) =>
        q.body?.tools?.some((t) => t.function.name === 'cluster-tools__search_files'),
      );
      expect(react).toBeDefined();
      expectRequestsMatch(logs, fake);
    });
  });
});
