/**
 * The validator's semantic rules, one by one, through the default kind registry: each rule
 * reports its stable code, a JSON path, the node or edge id and a sentence; warnings never block.
 */
import { defaultRegistry, validate } from '@switchboard/nodes';
import { checkConnection, PROBLEM_CODES, type Problem, WARNING_CODES } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { agent, baseFlow, decider, edge, flowWith, handover, node, team } from './fixtures/build.js';

const codes = (ps: Problem[]) => ps.map((p) => p.code);

function expectProblem(ps: Problem[], want: Partial<Problem> & { code: Problem['code'] }) {
  expect(ps).toContainEqual(expect.objectContaining(want));
  const p = ps.find((x) => x.code === want.code)!;
  expect(p.message.startsWith(PROBLEM_CODES[want.code])).toBe(true);
}

describe('validator rules', () => {
  it('accepts the base flow with no errors and no warnings', () => {
    const r = validate(baseFlow());
    expect(r).toMatchObject({ ok: true, errors: [], warnings: [] });
    expect(r.flow?.id).toBe('base');
  });

  it('reports duplicate ids of nodes, and edges that reuse a node id', () => {
    const f = baseFlow();
    f.nodes.push(agent('writer'));
    f.edges.push(handover('end', 'writer', 'end'));
    const r = validate(f);
    expectProblem(r.errors, { code: 'duplicate-id', path: '/nodes/3/id', nodeId: 'writer' });
    expectProblem(r.errors, { code: 'duplicate-id', path: '/edges/2/id', edgeId: 'end' });
  });

  it('reports edges to missing nodes and self-loops', () => {
    const f = baseFlow();
    f.edges.push(handover('ghost', 'writer', 'nobody'), handover('loop', 'writer', 'writer'));
    const r = validate(f);
    expectProblem(r.errors, { code: 'dangling-edge', path: '/edges/2/target', edgeId: 'ghost' });
    expectProblem(r.errors, { code: 'self-loop', path: '/edges/3', edgeId: 'loop' });
  });

  it.each([
    ['tools', 'writer', 'helper', /from a tool to an agent/],
    ['observe', 'kb', 'writer', /from an observer/],
    ['delegate', 'kb', 'writer', /from an agent/],
    ['handover', 'memo', 'writer', /flow nodes/],
    ['handover', 'writer', 'start', /to the start node/],
    ['handover', 'end', 'writer', /from an end node/],
  ] as const)('refuses a %s edge from %s to %s', (kind, source, target, why) => {
    const f = baseFlow();
    f.nodes.push(
      agent('helper'),
      node('kb', 'tool', { server: 'docs' }),
      node('memo', 'note', { text: 'hi' }),
    );
    f.edges.push(edge('x', kind, source, target), edge('grant', 'tools', 'kb', 'writer'));
    const r = validate(f);
    expectProblem(r.errors, { code: 'illegal-edge', path: '/edges/2', edgeId: 'x' });
    expect(r.errors.find((p) => p.code === 'illegal-edge')!.message).toMatch(why);
  });

  it('checkConnection is the same rule for the editor', () => {
    const get = (k: string) => defaultRegistry.require(k);
    expect(checkConnection('tools', get('tool'), get('agent'))).toBeUndefined();
    expect(checkConnection('observe', get('observer'), get('team'))).toBeUndefined();
    expect(checkConnection('delegate', get('agent'), get('team'))).toBeUndefined();
    expect(checkConnection('handover', get('decider'), get('human'))).toBeUndefined();
    expect(checkConnection('tools', get('agent'), get('tool'))?.code).toBe('illegal-edge');
  });

  it('checks parents: they exist, are teams, and form no cycle', () => {
    const f = flowWith(
      [
        team('t1', { entry: 'a' }, 't2'),
        team('t2', { entry: 't1' }, 't1'),
        agent('a', 't1'),
        agent('b', 'writer'),
        agent('c', 'nowhere'),
        agent('writer'),
      ],
      [handover('h1', 'writer', 't1')],
      'writer',
      't1',
    );
    const r = validate(f);
    expectProblem(r.errors, { code: 'bad-parent', path: '/nodes/4/parent', nodeId: 'b' });
    expect(r.errors.find((p) => p.nodeId === 'b')!.message).toContain('"writer" is not a team but "agent"');
    expectProblem(r.errors, { code: 'bad-parent', path: '/nodes/5/parent', nodeId: 'c' });
    const cycles = r.errors.filter((p) => p.code === 'parent-cycle');
    // Only the teams on the cycle are reported, not the agent below it.
    expect(cycles.map((p) => p.nodeId).sort()).toEqual(['t1', 't2']);
  });

  it('needs members and exactly one entry in every team', () => {
    const empty = flowWith([team('t')], [], 't', 't');
    expectProblem(validate(empty).errors, { code: 'team-empty', path: '/nodes/1', nodeId: 't' });

    const two = flowWith([team('t'), agent('a', 't'), agent('b', 't')], [], 't', 't');
    const r2 = validate(two);
    expectProblem(r2.errors, { code: 'team-no-entry', path: '/nodes/1/config', nodeId: 't' });
    expect(r2.errors[0]!.message).toContain('several members could go first (a, b)');

    const ring = flowWith(
      [team('t'), agent('a', 't'), agent('b', 't'), decider('d', { default: 'done' }, 't')],
      [handover('ab', 'a', 'b'), handover('bd', 'b', 'd'), handover('da', 'd', 'a')],
      't',
      't',
    );
    expect(validate(ring).errors[0]!.message).toContain('every member has a handover into it');

    const notMember = flowWith(
      [team('t', { entry: 'writer' }), agent('a', 't'), agent('writer')],
      [],
      't',
      't',
    );
    expectProblem(validate(notMember).errors, { code: 'team-no-entry', path: '/nodes/1/config/entry' });

    const noteFirst = flowWith(
      [team('t', { entry: 'memo' }), agent('a', 't'), node('memo', 'note', { text: 'x' }, 't')],
      [],
      't',
      't',
    );
    expect(validate(noteFirst).errors[0]!.message).toContain('"memo" cannot run first: its kind is "note"');

    const chain = flowWith(
      [team('t'), agent('a', 't'), agent('b', 't')],
      [handover('ab', 'a', 'b')],
      't',
      't',
    );
    expect(validate(chain).errors).toEqual([]);
    // A group chat's first speaker is chosen by its speaker selection, so no entry is needed.
    const chat = flowWith([team('t', { mode: 'groupChat' }), agent('a', 't'), agent('b', 't')], [], 't', 't');
    expect(validate(chat).errors).toEqual([]);
  });

  it('needs the deciders that fsm teams and decider speaker selection name, inside the team', () => {
    const fsm = flowWith(
      [team('t', { mode: 'fsm', entry: 'a' }), agent('a', 't'), agent('b', 't'), decider('d', {}, 't')],
      [handover('ab', 'a', 'b')],
      't',
      't',
    );
    const r = validate(fsm);
    expectProblem(r.errors, { code: 'team-decider', path: '/nodes/1/config', nodeId: 't' });
    expect(r.errors[0]!.message).toContain('"d" is the only decider inside');

    const outside = flowWith(
      [
        team('t', { mode: 'fsm', entry: 'a', decider: 'd' }),
        agent('a', 't'),
        decider('d', { default: 'done' }),
      ],
      [],
      't',
      't',
    );
    expectProblem(validate(outside).errors, { code: 'team-decider', path: '/nodes/1/config/decider' });

    const chat = flowWith(
      [
        team('t', { mode: 'groupChat', speaker: { strategy: 'decider' } }),
        agent('a', 't'),
        decider('d', {}, 't'),
      ],
      [],
      't',
      't',
    );
    expectProblem(validate(chat).errors, { code: 'team-decider', path: '/nodes/1/config/speaker' });
  });

  it('needs exactly one start and at least one end', () => {
    const f = baseFlow();
    f.nodes = f.nodes.filter((n) => n.kind !== 'end');
    f.edges = f.edges.filter((e) => e.target !== 'end');
    f.nodes.push(node('start2', 'start'));
    f.edges.push(handover('e3', 'start2', 'writer'));
    const r = validate(f);
    expectProblem(r.errors, { code: 'start-count', path: '/nodes/2', nodeId: 'start2' });
    expectProblem(r.errors, { code: 'no-end', path: '/nodes' });
    const none = baseFlow();
    none.nodes.shift();
    none.edges.shift();
    expectProblem(validate(none).errors, { code: 'start-count', path: '/nodes' });
  });

  it('warns about unreachable nodes without blocking the run', () => {
    const f = baseFlow();
    f.nodes.push(agent('island'), node('memo', 'note', { text: 'notes are never unreachable' }));
    const r = validate(f);
    expect(r.ok).toBe(true);
    expect(r.errors).toEqual([]);
    expect(r.warnings).toEqual([
      expect.objectContaining({ code: 'unreachable', path: '/nodes/3', nodeId: 'island' }),
    ]);
    for (const w of r.warnings) expect(WARNING_CODES.has(w.code)).toBe(true);
  });

  it('a handover straight to a team member reaches the team, its members and what follows it', () => {
    const f = flowWith(
      [
        team('room', {
          mode: 'groupChat',
          speaker: { strategy: 'roundRobin' },
          termination: { maxTurns: 4 },
        }),
        agent('first', 'room'),
        agent('second', 'room'),
      ],
      [],
      'first',
      'room',
    );
    const r = validate(f);
    expect(r.errors).toEqual([]);
    expect(r.warnings).toEqual([]);
    // A member of a team nothing enters is still unreachable, and so is its team.
    f.nodes.push(team('idle'), agent('idler', 'idle'));
    expect(codes(validate(f).warnings)).toEqual(['unreachable', 'unreachable']);
  });

  it('resolves model, server, node and edge references', () => {
    const f = baseFlow();
    f.nodes[1]!.config.model = 'gpt';
    f.nodes.push(
      node('kb', 'tool', { server: 'wiki' }),
      node('guard', 'observer', { type: 'guard', escalateTo: 'boss', model: 'default' }),
    );
    f.edges.push(edge('g', 'tools', 'kb', 'writer'), edge('o', 'observe', 'guard', 'writer'));
    const r = validate(f);
    expectProblem(r.errors, { code: 'unknown-model', path: '/nodes/1/config/model', nodeId: 'writer' });
    expect(r.errors.find((p) => p.code === 'unknown-model')!.message).toContain('models are "default"');
    expectProblem(r.errors, { code: 'unknown-server', path: '/nodes/3/config/server', nodeId: 'kb' });
    expectProblem(r.errors, {
      code: 'unknown-node-ref',
      path: '/nodes/4/config/escalateTo',
      nodeId: 'guard',
    });
  });

  it('allows ${env:NAME} only where a secret may stand, and refuses literal keys', () => {
    const f = baseFlow();
    f.models.remote = {
      provider: 'openai',
      model: 'gpt-4o-mini',
      apiKey: '${env:OPENAI_API_KEY}',
      baseURL: '${env:BASE}',
    };
    f.mcpServers = {
      docs: { builtin: 'documents' },
      gh: { command: 'gh-mcp', env: { GITHUB_TOKEN: '${env:GITHUB_TOKEN}', LOG: 'debug' } },
      web: { url: 'https://example.com/mcp', headers: { Authorization: 'Bearer ${env:WEB_TOKEN}' } },
    };
    expect(validate(f).errors).toEqual([]);

    f.nodes[1]!.config.prompt = [{ text: 'Use the key ${env:OPENAI_API_KEY} to call it' }];
    f.nodes[1]!.config.role = 'Uses sk-proj-abcdefghijklmnopqrstuvwx1234 for everything';
    f.mcpServers.web = {
      url: 'https://example.com/mcp',
      headers: { Authorization: 'Bearer hunter2hunter2' },
    };
    f.mcpServers.gh = { command: 'gh-mcp', args: ['--token', '${env:GITHUB_TOKEN}'] };
    const r = validate(f);
    expectProblem(r.errors, {
      code: 'env-not-allowed',
      path: '/nodes/1/config/prompt/0/text',
      nodeId: 'writer',
    });
    expectProblem(r.errors, { code: 'env-not-allowed', path: '/mcpServers/gh/args/1' });
    expectProblem(r.errors, { code: 'literal-secret', path: '/nodes/1/config/role', nodeId: 'writer' });
    expectProblem(r.errors, { code: 'literal-secret', path: '/mcpServers/web/headers/Authorization' });
    // The message never repeats the secret.
    for (const p of r.errors) expect(p.message).not.toContain('hunter2');
    for (const p of r.errors) expect(p.message).not.toContain('sk-proj');
  });

  it('refuses a handover cycle nothing can stop, and accepts the ones something stops', () => {
    const loop = flowWith(
      [agent('a'), agent('b')],
      [handover('ab', 'a', 'b'), handover('ba', 'b', 'a')],
      'a',
      'b',
    );
    const r = validate(loop);
    expectProblem(r.errors, { code: 'endless-cycle', path: '/nodes/1', nodeId: 'a' });
    expect(r.errors[0]!.message).toContain('"a" → "b" → "a"');

    const withDecider = flowWith(
      [agent('a'), decider('d', { default: 'done', rules: [{ when: { always: true }, to: 'a' }] })],
      [handover('ad', 'a', 'd'), handover('da', 'd', 'a')],
      'a',
      'd',
    );
    expect(validate(withDecider).errors).toEqual([]);

    const withHuman = flowWith(
      [agent('a'), node('h', 'human', { mode: 'ask', question: 'More?' })],
      [handover('ah', 'a', 'h'), handover('ha', 'h', 'a')],
      'a',
      'h',
    );
    expect(validate(withHuman).errors).toEqual([]);

    const inTeam = flowWith(
      [team('t', { entry: 'a', termination: { phrase: 'DONE' } }), agent('a', 't'), agent('b', 't')],
      [handover('ab', 'a', 'b'), handover('ba', 'b', 'a')],
      't',
      't',
    );
    expect(validate(inTeam).errors).toEqual([]);

    // A team that only sits on the cycle does not stop it: control leaves it and comes back.
    const throughTeam = flowWith(
      [team('t', { entry: 'a' }), agent('a', 't'), agent('critic')],
      [handover('tc', 't', 'critic'), handover('ct', 'critic', 't')],
      't',
      'critic',
    );
    expectProblem(validate(throughTeam).errors, { code: 'endless-cycle' });
  });

  it('checks that decider routes name edges the decider can take, or "done"', () => {
    const f = flowWith(
      [
        agent('a'),
        decider('d', {
          rules: [
            { when: { path: 'last.content', op: 'contains', value: 'x' }, to: 'to-a' },
            { when: { path: 'last.content', op: 'contains', value: 'y' }, to: 'a' },
            { when: { always: true }, to: ['to-a', 'nope'] },
          ],
          default: 'end-edge',
        }),
      ],
      [handover('ad', 'a', 'd'), handover('to-a', 'd', 'a')],
      'a',
      'd',
    );
    const r = validate(f);
    expect(r.errors.map((p) => [p.code, p.path])).toEqual([
      ['bad-route', '/nodes/2/config/rules/2/to/1'],
      ['bad-route', '/nodes/2/config/default'],
    ]);
    expect(r.errors[0]!.message).toContain('"nope"; the edges it can take are "to-a", "out"');

    // The transition decider of an fsm team routes along the states' drawn transitions.
    const fsm = flowWith(
      [
        team('t', { mode: 'fsm', entry: 'plan', decider: 'next', termination: { maxTurns: 8 } }),
        agent('plan', 't'),
        agent('write', 't'),
        decider('next', { rules: [{ when: { always: true }, to: 'plan-write' }], default: 'done' }, 't'),
      ],
      [handover('plan-write', 'plan', 'write'), handover('write-plan', 'write', 'plan')],
      't',
      't',
    );
    expect(validate(fsm).errors).toEqual([]);
  });

  it('checks that an approval gate marks its branches "approve" or "reject"', () => {
    const gate = (branches: string[]) =>
      flowWith(
        [node('boss', 'human', { mode: 'approve', question: 'Ship it?' }), agent('fix')],
        branches.map((b, k) => handover(`b${k}`, 'boss', k === 0 ? 'end' : 'fix', { branch: b })),
        'boss',
        'fix',
      );
    expect(validate(gate(['approve', 'reject'])).errors).toEqual([]);
    expect(validate(gate(['approve'])).errors).toEqual([]);
    const odd = validate(gate(['approve', 'maybe']));
    expect(odd.errors).toEqual([
      expect.objectContaining({ code: 'bad-route', path: '/edges/2/config/branch', edgeId: 'b1' }),
    ]);
    expect(odd.errors[0]!.message).toContain(
      '"maybe": the branches of an approval gate are "approve" and "reject"',
    );
  });

  it('needs a "default" model where a node names none', () => {
    const f = flowWith(
      [
        node('d', 'decider', { strategy: 'llm' }),
        node('sum', 'observer', { type: 'summarizer', every: 3 }),
        team('chat', { mode: 'groupChat', speaker: { strategy: 'llm' } }),
        agent('a', 'chat', { model: 'main' }),
        agent('b', undefined, { model: 'main' }),
      ],
      [handover('d-chat', 'd', 'chat'), handover('chat-b', 'chat', 'b'), edge('o', 'observe', 'sum', 'b')],
      'd',
      'b',
    );
    f.models = { main: { provider: 'scripted' } };
    f.nodes = f.nodes.filter((n) => n.id !== 'writer');
    const r = validate(f);
    expect(r.errors.map((p) => [p.code, p.path, p.nodeId])).toEqual([
      ['unknown-model', '/nodes/1/config', 'd'],
      ['unknown-model', '/nodes/2/config', 'sum'],
      ['unknown-model', '/nodes/3/config/speaker', 'chat'],
    ]);
    f.models.default = { provider: 'scripted' };
    expect(validate(f).errors).toEqual([]);
  });

  it('explains config errors in plain words, with a suggestion for typos', () => {
    const f = baseFlow();
    f.nodes[1]!.config = {
      rol: 'x',
      model: 'default',
      prompt: [{ text: 'hi', when: { path: 'a', op: 'bogus' } }],
      output: { type: 'xml' },
    };
    const r = validate(f);
    const byPath = Object.fromEntries(r.errors.map((p) => [p.path, p.message]));
    expect(byPath['/nodes/1/config']).toContain('missing property "role"');
    expect(byPath['/nodes/1/config/rol']).toContain('unknown property "rol"; did you mean "role"?');
    expect(byPath['/nodes/1/config/prompt/0/when/op']).toContain('must be one of "eq", "ne"');
    expect(byPath['/nodes/1/config/output/type']).toContain('must be one of "text", "json"');
    expect(r.errors.every((p) => p.code === 'config' && p.nodeId === 'writer')).toBe(true);
    expect(r.errors).toHaveLength(4);
  });

  it('caps the error list and says how many more there were', () => {
    const f = baseFlow();
    for (let i = 0; i < 100; i++) f.nodes.push(node(`bad${i}`, 'agent', { role: 1 }));
    const r = validate(f, { maxErrors: 5 });
    expect(r.errors).toHaveLength(6);
    expect(r.errors[5]).toMatchObject({ code: 'too-many-errors', path: '' });
  });

  it('gives every problem a known code, a JSON pointer and a sentence', () => {
    const f = baseFlow();
    f.nodes.push(agent('x', 'nope'), node('y', 'robot'));
    f.edges.push(handover('z', 'x', 'ghost'));
    const r = validate(f);
    expect(codes(r.errors).length).toBeGreaterThan(0);
    for (const p of [...r.errors, ...r.warnings]) {
      expect(Object.keys(PROBLEM_CODES)).toContain(p.code);
      expect(p.path === '' || p.path.startsWith('/')).toBe(true);
      expect(p.message.length).toBeGreaterThan(10);
    }
  });
});
