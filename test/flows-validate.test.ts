/**
 * Every flow in `flows/` validates with no errors, is written in canonical form (the bytes
 * `serializeFlow` produces), points editors at the schema, and the examples a flow lists in
 * `metadata.examples` run to completion offline on their scripted models, with real built-in
 * MCP servers. Together the flows use every node kind, mode, strategy and edge kind.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultRegistry, validateText } from '@switchboard/nodes';
import { EDGE_KINDS, type Flow, serializeFlow } from '@switchboard/schemas';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../runtime/src/cli/main.js';
import { runFlow } from '../runtime/src/index.js';
import { createMcpToolHost } from '../runtime/src/tools/mcp-host.js';

const dir = fileURLToPath(new URL('../flows/', import.meta.url));
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.json') && !f.endsWith('.tests.json'))
  .sort();
const read = (f: string) => readFileSync(join(dir, f), 'utf8');
const flows = files.map((f) => JSON.parse(read(f)) as Flow);
const tmp = mkdtempSync(join(tmpdir(), 'sb-flows-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface Example {
  input: string;
  answers?: Record<string, string | string[]>;
}

describe('flows/', () => {
  it('holds the hand-written examples', () => {
    expect(files).toEqual(expect.arrayContaining(['research-desk.json', 'support-triage.json']));
  });

  it.each(files)('%s validates with no errors and is canonical', (f) => {
    const text = read(f);
    const r = validateText(text);
    expect(r.errors).toEqual([]);
    expect(r.ok).toBe(true);
    expect(text).toBe(serializeFlow(JSON.parse(text)));
    expect(JSON.parse(text).$schema).toBe('../schemas/flow.schema.json');
  });

  it('`switchboard validate flows/*.json` passes', async () => {
    let out = '';
    const code = await main(['node', 'switchboard', 'validate', ...files.map((f) => join(dir, f))], {
      out: (s) => {
        out += s;
      },
      err: () => {},
      isTTY: false,
    });
    expect(code).toBe(0);
    expect(out.trim().split('\n')).toHaveLength(files.length);
  });

  it('together use every node kind, team mode, decider strategy, observer type, human mode and edge kind', () => {
    const nodes = flows.flatMap((f) => f.nodes);
    const used = (kind: string, key: string) =>
      new Set(nodes.filter((n) => n.kind === kind).map((n) => n.config[key]));
    expect(new Set(nodes.map((n) => n.kind))).toEqual(new Set(defaultRegistry.list().map((k) => k.kind)));
    for (const m of ['handover', 'groupChat', 'fsm']) expect(used('team', 'mode')).toContain(m);
    for (const s of ['llm', 'rules', 'roundRobin']) expect(used('decider', 'strategy')).toContain(s);
    for (const t of ['summarizer', 'guard', 'reflection']) expect(used('observer', 'type')).toContain(t);
    for (const m of ['ask', 'approve']) expect(used('human', 'mode')).toContain(m);
    expect(new Set(flows.flatMap((f) => f.edges.map((e) => e.kind)))).toEqual(new Set(EDGE_KINDS));
    // Built-in MCP servers and scripted models only: the examples need no network and no keys.
    for (const f of flows.filter((x) => ['support-triage', 'research-desk'].includes(x.id))) {
      for (const m of Object.values(f.models)) expect(m.provider).toBe('scripted');
      for (const s of Object.values(f.mcpServers ?? {})) expect(s).toHaveProperty('builtin');
    }
  });

  it('teams are drawn big enough to hold their members', () => {
    for (const f of flows)
      for (const t of f.nodes.filter((n) => n.kind === 'team')) {
        expect(t.size, `${f.id}/${t.id} has a size`).toBeDefined();
        for (const m of f.nodes.filter((n) => n.parent === t.id)) {
          expect(m.position.x, `${f.id}/${m.id}`).toBeGreaterThanOrEqual(0);
          expect(m.position.y, `${f.id}/${m.id}`).toBeGreaterThanOrEqual(0);
          expect(m.position.x + 180, `${f.id}/${m.id} fits in ${t.id}`).toBeLessThanOrEqual(t.size!.width);
          expect(m.position.y + 60, `${f.id}/${m.id} fits in ${t.id}`).toBeLessThanOrEqual(t.size!.height);
        }
      }
  });

  const runs = flows.flatMap((f, i) =>
    ((f.metadata?.examples as Example[] | undefined) ?? []).map(
      (ex) => [files[i]!, ex.input, ex, f] as const,
    ),
  );
  it.each(runs)('%s runs offline: %s', async (file, _input, ex, flow) => {
    const dataDir = mkdtempSync(join(tmp, 'run-'));
    const h = runFlow(flow, ex.input, {
      ...(ex.answers ? { answers: ex.answers } : {}),
      tools: createMcpToolHost(flow, { baseDir: dir }),
      dataDir,
    });
    const types: string[] = [];
    for await (const e of h.events) {
      types.push(e.type);
      expect(e.scripted, `${file}: every event of a scripted run says so`).toBe(true);
    }
    const r = await h.result;
    expect(r.status, JSON.stringify(r)).toBe('completed');
    // An answer: text, or structured output when the end node returns the state.
    expect(r.output ?? '', `${file}: the run produced no answer`).not.toEqual('');
    expect(types).not.toContain('tool.denied');
    expect(types).not.toContain('node.failed');
  });

  it('the examples take the routes they were written for', async () => {
    const support = flows.find((f) => f.id === 'support-triage')!;
    const route = async (input: string, answers?: Record<string, string>) => {
      const h = runFlow(support, input, {
        ...(answers ? { answers } : {}),
        tools: createMcpToolHost(support, { baseDir: dir }),
        dataDir: mkdtempSync(join(tmp, 'route-')),
      });
      const taken: string[] = [];
      for await (const e of h.events) if (e.type === 'handover' && e.edgeId) taken.push(e.edgeId);
      return { taken, result: await h.result };
    };
    const billing = await route('Please refund invoice INV-1042', { approval: 'yes' });
    expect(billing.taken).toEqual(['begin', 'to-billing', 'decided', 'billing-done', 'approved', 'sent']);
    expect(billing.result.output).toContain('refund the duplicate 49.00 EUR');
    const tech = await route('It shows an error and then a crash');
    expect(tech.taken).toEqual(['begin', 'to-tech', 'tech-done']);
    const other = await route('Do you ship to Norway?');
    expect(other.taken).toEqual(['begin', 'to-general', 'general-done']);
  });
});
