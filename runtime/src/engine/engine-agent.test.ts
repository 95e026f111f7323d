import { describe, expect, it } from 'vitest';
import { runFlow } from './index.js';
import {
  agent,
  collectRun,
  edge,
  flow,
  MemoryToolHost,
  node,
  recordingModels,
  trace,
} from './testing/index.js';

const simple = (a: ReturnType<typeof agent>, script: unknown[], extra: Parameters<typeof flow>[3] = {}) =>
  flow(
    [node('start', 'start'), a, node('end', 'end')],
    [edge('start', a.id), edge(a.id, 'end')],
    script,
    extra,
  );

describe('agent: prompt, memory, output', () => {
  it('assembles the system prompt from segments whose condition holds, with templates', async () => {
    const { factory, requests } = recordingModels();
    const f = simple(
      agent('w', {
        prompt: [
          { text: 'Task: {{task}}; mode {{state.mode}}' },
          { text: 'Only when urgent', when: { path: 'input.urgent', op: 'eq', value: true } },
          { text: 'Last said: {{last}}', when: { path: 'last.content', op: 'contains', value: 'report' } },
        ],
      }),
      ['done'],
    );
    await collectRun(f, { task: 'the report', urgent: false }, { models: factory });
    expect(requests[0]!.messages[0]).toEqual({
      role: 'system',
      content: 'Task: the report; mode \n\nLast said: the report',
    });
  });

  it('thread memory sees only its own thread; transcript memory sees everything', async () => {
    const { factory, requests } = recordingModels();
    const f = flow(
      [
        node('start', 'start'),
        agent('a'),
        agent('b'),
        agent('c', { memory: 'thread' }),
        agent('d'),
        node('end', 'end'),
      ],
      [edge('start', 'a'), edge('a', 'b'), edge('b', 'c'), edge('c', 'd'), edge('d', 'end')],
      [
        { node: 'a', text: 'A says' },
        { node: 'b', text: 'B says' },
        { node: 'c', text: 'C says' },
        { node: 'd', text: 'D says' },
      ],
    );
    await collectRun(f, 'go', { models: factory });
    const c = requests.find((r) => r.nodeId === 'c')!;
    expect(c.messages.slice(1).map((m) => m.content)).toEqual(['B says']);
    const d = requests.find((r) => r.nodeId === 'd')!;
    expect(d.messages.slice(1).map((m) => m.content)).toEqual(['go', 'A says', 'B says', 'C says']);
    expect(d.messages[2]).toMatchObject({ role: 'user', name: 'a' });
  });

  it('JSON output is validated and re-prompted with the error, up to maxRepairs', async () => {
    const { factory, requests } = recordingModels();
    const schema = { type: 'object', properties: { score: { type: 'number' } }, required: ['score'] };
    const f = simple(agent('j', { output: { type: 'json', schema, maxRepairs: 2 } }), [
      'not json',
      { json: { score: 'high' } },
      { json: { score: 9 } },
    ]);
    const { result } = await collectRun(f, 'rate', { models: factory });
    expect(result).toMatchObject({ status: 'completed', output: { score: 9 } });
    expect(requests).toHaveLength(3);
    expect(requests[2]!.messages.at(-1)!.content).toContain('/score');
    expect(requests.every((r) => r.jsonSchema)).toBe(true);
  });

  it('fails with output_invalid after maxRepairs (and the agent retry)', async () => {
    const f = simple(
      agent('j', { retries: 0, output: { type: 'json', schema: { type: 'object' }, maxRepairs: 1 } }),
      [{ text: 'nope', repeat: true }],
    );
    const { result, events } = await collectRun(f, 'x');
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('output_invalid');
    expect(events.find((e) => e.type === 'node.failed')).toMatchObject({
      nodeId: 'j',
      error: { code: 'output_invalid' },
    });
  });

  it('retries a failed turn (model error) and then succeeds', async () => {
    const f = simple(agent('r', { retries: 1 }), [
      { error: { code: 'server_error', message: 'boom' } },
      'second try',
    ]);
    const { result, events } = await collectRun(f, 'x');
    expect(result).toMatchObject({ status: 'completed', output: 'second try' });
    expect(events.some((e) => e.type === 'log' && e.text.includes('retrying r'))).toBe(true);
  });

  it('inbox items are consumed sorted by priority: tool results, directives/briefings, then user', async () => {
    const { factory, requests } = recordingModels();
    const f = flow(
      [node('start', 'start'), agent('a'), agent('b'), node('end', 'end')],
      [
        edge('start', 'a'),
        edge('a', 'b', 'handover', { briefing: 'Briefing for b: {{last}}' }),
        edge('b', 'end'),
      ],
      [
        { node: 'a', text: 'from a' },
        { node: 'b', text: 'from b' },
      ],
    );
    const h = runFlow(f, 'go', {
      models: factory,
      onEvent: (e) => {
        // A user message for b arrives before the briefing, yet the briefing sorts first.
        if (e.type === 'node.started' && e.nodeId === 'a') {
          h.send({ type: 'inject', text: 'a note from the user', nodeId: 'b' });
        }
      },
    });
    await h.result;
    const b = requests.find((r) => r.nodeId === 'b')!;
    expect(b.messages.at(-1)!.content).toBe('Briefing for b: from a\n\na note from the user');
  });
});

describe('agent: tools', () => {
  const mcpServers = { calc: { builtin: 'calc' }, secret: { builtin: 'secret' } };
  const toolsFlow = (script: unknown[], agentCfg: Record<string, unknown> = {}) =>
    flow(
      [
        node('start', 'start'),
        agent('a', agentCfg),
        agent('other'),
        node('t', 'tool', { server: 'calc' }),
        node('t2', 'tool', { server: 'secret' }),
        node('end', 'end'),
      ],
      [
        edge('start', 'a'),
        edge('a', 'end'),
        edge('t', 'a', 'tools'),
        edge('t2', 'other', 'tools'),
        edge('start', 'other'),
      ],
      script,
      { mcpServers },
    );
  const servers = () => ({
    calc: {
      add: {
        description: 'adds',
        inputSchema: {
          type: 'object',
          properties: { x: { type: 'number' }, y: { type: 'number' } },
          required: ['x', 'y'],
        },
        run: (args: Record<string, unknown>) => String((args.x as number) + (args.y as number)),
      },
    },
    secret: { wipe: { run: () => 'wiped' } },
  });

  it('runs tool rounds: the result goes back to the model, events name the node', async () => {
    const f = flow(
      [node('start', 'start'), agent('a'), node('t', 'tool', { server: 'calc' }), node('end', 'end')],
      [edge('start', 'a'), edge('a', 'end'), edge('t', 'a', 'tools')],
      [
        { node: 'a', toolCalls: [{ id: 'c1', name: 'add', args: { x: 2, y: 3 } }] },
        { node: 'a', text: 'it is 5' },
      ],
      { mcpServers },
    );
    const { factory, requests } = recordingModels();
    const host = new MemoryToolHost(f, servers());
    const { result, events } = await collectRun(f, 'add', { models: factory, tools: host });
    expect(result.output).toBe('it is 5');
    expect(host.calls).toEqual([{ agent: 'a', tool: 'add', args: { x: 2, y: 3 } }]);
    expect(trace(events, ['tool.called', 'tool.result'])).toEqual(['tool.called@a', 'tool.result@a']);
    expect(events.find((e) => e.type === 'tool.result')).toMatchObject({
      callId: 'c1',
      result: '5',
      isError: false,
    });
    expect(requests[1]!.messages.at(-1)).toEqual({ role: 'tool', content: '5', toolCallId: 'c1' });
    expect(requests[0]!.tools).toEqual(['add']);
    expect(host.released).toHaveLength(1);
  });

  const malformed: Array<[string, Record<string, unknown>, string]> = [
    ['truncated JSON', { name: 'add', arguments: '{"x": 1, "y":' }, 'arguments_not_json'],
    ['wrong types', { name: 'add', args: { x: 'one', y: 2 } }, 'arguments_invalid'],
    ['unknown tool', { name: 'format_disk', args: {} }, 'not_granted'],
    ["another agent's tool", { name: 'wipe', args: {} }, 'not_granted'],
    [
      '1 MB of arguments',
      { name: 'add', arguments: JSON.stringify({ x: 1, y: 2, pad: 'x'.repeat(1024 * 1024) }) },
      'arguments_too_large',
    ],
  ];
  for (const [what, call, code] of malformed) {
    it(`a malformed call (${what}) is never run nor written back; the model gets a structured error`, async () => {
      const f = toolsFlow([
        { node: 'a', toolCalls: [{ id: 'bad1', ...call }] },
        { node: 'a', text: 'recovered' },
        { node: 'other', text: 'o' },
      ]);
      const { factory, requests } = recordingModels();
      const host = new MemoryToolHost(f, servers());
      const { result, events } = await collectRun(f, 'x', { models: factory, tools: host });
      expect(host.calls).toEqual([]);
      expect(events.some((e) => e.type === 'tool.called' && e.nodeId === 'a')).toBe(false);
      const second = requests.filter((r) => r.nodeId === 'a')[1]!;
      const history = JSON.stringify(second.messages);
      expect(history).not.toContain('bad1"');
      expect(history).not.toContain('xxxxxxxxxx');
      const err = JSON.parse(second.messages.at(-1)!.content);
      expect(err).toMatchObject({ error: 'invalid_tool_calls', problems: [{ error: code }] });
      if (code === 'not_granted')
        expect(events.find((e) => e.type === 'tool.denied')).toMatchObject({ nodeId: 'a', callId: 'bad1' });
      expect(result.status).toBe('completed');
    });
  }

  it('one malformed call spoils only itself and what follows it: the good calls before it run', async () => {
    const f = toolsFlow([
      {
        node: 'a',
        toolCalls: [
          { id: 'c1', name: 'add', args: { x: 2, y: 3 } },
          { id: 'bad2', name: 'add', arguments: '{"x": 1, "y":' },
          { id: 'c3', name: 'add', args: { x: 1, y: 1 } },
          { id: 'bad4', name: 'wipe', args: {} },
        ],
      },
      { node: 'a', text: 'it is 5' },
      { node: 'other', text: 'o' },
    ]);
    const { factory, requests } = recordingModels();
    const host = new MemoryToolHost(f, servers());
    const { result, events } = await collectRun(f, 'x', { models: factory, tools: host });
    expect(result.status).toBe('completed');
    // Only the call before the first malformed one ran.
    expect(host.calls).toEqual([{ agent: 'a', tool: 'add', args: { x: 2, y: 3 } }]);
    expect(events.filter((e) => e.type === 'tool.called' && e.nodeId === 'a')).toHaveLength(1);
    expect(events.find((e) => e.type === 'tool.denied')).toMatchObject({ nodeId: 'a', callId: 'bad4' });
    const second = requests.filter((r) => r.nodeId === 'a')[1]!;
    const [assistant, toolMsg, err] = second.messages.slice(-3);
    // The history carries the call that ran and its result; nothing of the malformed calls.
    expect(assistant!.role).toBe('assistant');
    const ran = assistant!.role === 'assistant' ? (assistant!.toolCalls ?? []) : [];
    expect(ran.map((c) => c.id)).toEqual(['c1']);
    expect(toolMsg).toEqual({ role: 'tool', content: '5', toolCallId: 'c1' });
    expect(JSON.stringify(second.messages)).not.toContain('{\\"x\\": 1, \\"y\\":');
    const body = JSON.parse(err!.content);
    expect(body.error).toBe('invalid_tool_calls');
    expect(body.problems.map((p: { callId: string; error: string }) => [p.callId, p.error])).toEqual([
      ['bad2', 'arguments_not_json'],
      ['c3', 'not_run_after_invalid_call'],
      ['bad4', 'not_granted'],
    ]);
    expect(body.instruction).toMatch(/1 call\(s\) before the first problem ran/);
  });

  it('after a bounded number of repairs the turn fails with tool_call_invalid', async () => {
    const f = toolsFlow(
      [
        { node: 'a', toolCalls: [{ name: 'add', arguments: '{' }], repeat: true },
        { node: 'other', text: 'o' },
      ],
      { retries: 0 },
    );
    const host = new MemoryToolHost(f, servers());
    const { result, events } = await collectRun(f, 'x', { tools: host });
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('tool_call_invalid');
    expect(host.calls).toEqual([]);
    expect(events.filter((e) => e.type === 'model.completed' && e.nodeId === 'a')).toHaveLength(3);
  });

  it('1,000 random tool names: none outside the grant is executed', async () => {
    const names = Array.from({ length: 1000 }, (_, i) => (i % 3 === 0 ? 'wipe' : `t_${(i * 7919) % 10007}`));
    const script = [
      ...names.map((n) => ({
        node: 'a',
        toolCalls: [
          { name: n, args: {} },
          { name: 'add', args: { x: 1, y: 1 } },
        ],
      })),
      { node: 'other', text: 'o', repeat: true },
    ];
    // Enough repairs to try every name; the good call after each bad one never runs.
    const f = toolsFlow(script, { retries: 0 });
    const host = new MemoryToolHost(f, servers());
    const denied: string[] = [];
    const base = { ...f, budgets: { maxSteps: 100_000 } };
    for (let i = 0; i < 1000; i += 3) {
      const part = {
        ...base,
        models: { default: { provider: 'scripted', script: script.slice(i, i + 3).concat(script.at(-1)!) } },
      };
      const r = await collectRun(part, 'x', {
        tools: host,
        onEvent: (e) => void (e.type === 'tool.denied' && denied.push(e.tool)),
      });
      expect(r.result.status).toBe('failed');
    }
    expect(host.calls).toEqual([]);
    expect(denied.length).toBeGreaterThanOrEqual(1000);
  });
});
