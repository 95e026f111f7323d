/** Flows used by the editor's unit tests. */
import type { Flow } from '@switchboard/schemas';

/** A flow touching every kind, nested teams, edge configs and key orders serializeFlow keeps. */
export function richFlow(): Flow {
  return {
    $schema: '../schemas/flow.schema.json',
    version: 1,
    id: 'rich',
    name: 'Rich flow',
    description: 'Every kind once.',
    models: {
      default: { provider: 'scripted', script: [{ text: 'hi' }] },
      big: { provider: 'openai', model: 'gpt-4o', apiKey: '${env:OPENAI_API_KEY}', temperature: 0.3 },
    },
    mcpServers: { docs: { builtin: 'documents' } },
    budgets: { maxSteps: 50 },
    nodes: [
      { id: 'start', kind: 'start', position: { x: 0, y: 0 }, config: {} },
      {
        id: 'team1',
        kind: 'team',
        label: 'Writers',
        position: { x: 200, y: -40 },
        size: { width: 520, height: 320 },
        config: { mode: 'handover', entry: 'writer', termination: { maxTurns: 12, phrase: 'DONE' } },
      },
      {
        id: 'writer',
        kind: 'agent',
        parent: 'team1',
        position: { x: 20, y: 60 },
        config: {
          role: 'Writes',
          model: 'big',
          prompt: [
            { text: 'Write {{task}}' },
            { text: 'Be brief', when: { path: 'state.short', op: 'eq', value: true } },
          ],
          output: { type: 'json', schema: { type: 'object', properties: { ok: { type: 'boolean' } } } },
        },
      },
      {
        id: 'check',
        kind: 'decider',
        parent: 'team1',
        position: { x: 260, y: 60 },
        config: {
          strategy: 'rules',
          rules: [{ when: { path: 'last.json.ok', op: 'eq', value: true }, to: 'e3' }],
          default: 'e4',
        },
      },
      { id: 'docs', kind: 'tool', position: { x: 0, y: 300 }, config: { server: 'docs', include: ['read'] } },
      {
        id: 'sum',
        kind: 'observer',
        position: { x: 200, y: 400 },
        config: { type: 'summarizer', every: 4, model: 'default' },
      },
      { id: 'ask', kind: 'human', position: { x: 800, y: 200 }, config: { mode: 'ask', question: 'OK?' } },
      { id: 'end', kind: 'end', position: { x: 1000, y: 0 }, config: { output: 'last' } },
      {
        id: 'n1',
        kind: 'note',
        position: { x: 0, y: 500 },
        size: { width: 220, height: 120 },
        config: { text: 'hello' },
      },
    ],
    edges: [
      { id: 'e1', kind: 'handover', source: 'start', target: 'team1' },
      {
        id: 'e2',
        kind: 'handover',
        source: 'writer',
        target: 'check',
        config: { context: { mode: 'lastN', n: 2 } },
      },
      { id: 'e3', kind: 'handover', source: 'check', target: 'ask' },
      {
        id: 'e4',
        kind: 'handover',
        source: 'check',
        target: 'writer',
        label: 'again',
        config: { briefing: 'Fix {{last}}' },
      },
      { id: 'e5', kind: 'handover', source: 'ask', target: 'end' },
      { id: 'e6', kind: 'tools', source: 'docs', target: 'writer', config: { allow: ['read'] } },
      { id: 'e7', kind: 'observe', source: 'sum', target: 'team1' },
    ],
    metadata: { zeta: 1, alpha: { b: 2, a: 1 } },
  };
}

/** What a new flow in the editor looks like. */
export function emptyFlow(): Flow {
  return {
    version: 1,
    id: 'untitled',
    name: 'Untitled flow',
    models: { default: { provider: 'scripted' } },
    nodes: [
      { id: 'start', kind: 'start', position: { x: 0, y: 0 }, config: {} },
      { id: 'end', kind: 'end', position: { x: 800, y: 0 }, config: { output: 'last' } },
    ],
    edges: [],
  };
}
