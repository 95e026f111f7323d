import type { RunEvent } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { runFlow } from './index.js';
import {
  agent,
  assertEventsValid,
  assertSeqContiguous,
  chain,
  collectRun,
  edge,
  flow,
  MemoryToolHost,
  node,
  recordingModels,
  trace,
} from './testing/index.js';

const messages = (events: RunEvent[]) =>
  events.filter((e) => e.type === 'message').map((e) => (e as { message: unknown }).message);

describe('commands', () => {
  it('pause / resume: the run pauses between events and the transcript equals an uninterrupted run', async () => {
    const plain = await collectRun(chain(5), 'go');
    const events: RunEvent[] = [];
    let paused = false;
    const h = runFlow(chain(5), 'go', {
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'node.completed' && e.nodeId === 'a2') h.send({ type: 'pause' });
        if (e.type === 'run.paused') {
          paused = true;
          setTimeout(() => {
            expect(h.status).toBe('paused');
            h.send({ type: 'resume' });
          }, 30);
        }
      },
    });
    const r = await h.result;
    expect(r.status).toBe('completed');
    expect(paused).toBe(true);
    assertEventsValid(events);
    assertSeqContiguous(events);
    const i = events.findIndex((e) => e.type === 'run.paused');
    expect(events[i + 1]!.type).toBe('run.resumed');
    expect(messages(events)).toEqual(messages(plain.events));
  });

  it('cancel aborts the in-flight model call; nothing follows run.cancelled', async () => {
    const f = flow(
      [node('start', 'start'), agent('slow'), node('end', 'end')],
      [edge('start', 'slow'), edge('slow', 'end')],
      [{ text: 'never', latencyMs: 60_000 }],
    );
    const events: RunEvent[] = [];
    let cancelledAt = 0;
    const h = runFlow(f, 'x', {
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'turn.started')
          setTimeout(() => {
            cancelledAt = Date.now();
            h.send({ type: 'cancel', reason: 'user' });
          }, 20);
      },
    });
    const r = await h.result;
    expect(r.status).toBe('cancelled');
    // The run ends at the cancel, not when the 60 s model reply would have come.
    expect(Date.now() - cancelledAt).toBeLessThan(1000);
    await new Promise((res) => setTimeout(res, 50));
    expect(events.at(-1)).toMatchObject({ type: 'run.cancelled', reason: 'user' });
    assertEventsValid(events);
  });

  it('cancel during a tool call reaches the tool through its AbortSignal', async () => {
    const f = flow(
      [node('start', 'start'), agent('a'), node('t', 'tool', { server: 's' }), node('end', 'end')],
      [edge('start', 'a'), edge('a', 'end'), edge('t', 'a', 'tools')],
      [{ toolCalls: [{ name: 'wait', args: {} }] }, 'after'],
      { mcpServers: { s: { builtin: 's' } } },
    );
    let aborted = false;
    const host = new MemoryToolHost(f, {
      s: {
        wait: {
          run: (_args, { signal }) =>
            new Promise((_res, rej) => {
              signal.addEventListener('abort', () => {
                aborted = true;
                rej(new Error('aborted'));
              });
            }),
        },
      },
    });
    const events: RunEvent[] = [];
    const h = runFlow(f, 'x', {
      tools: host,
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'tool.called') setTimeout(() => h.send({ type: 'cancel' }), 10);
      },
    });
    expect((await h.result).status).toBe('cancelled');
    expect(aborted).toBe(true);
    await new Promise((res) => setTimeout(res, 20));
    expect(events.at(-1)!.type).toBe('run.cancelled');
  });

  it('step runs one turn then pauses again', async () => {
    const events: RunEvent[] = [];
    let pauses = 0;
    const h = runFlow(chain(4), 'go', {
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'node.started' && e.nodeId === 'a1' && pauses === 0) h.send({ type: 'pause' });
        if (e.type === 'run.paused') {
          pauses++;
          setTimeout(() => h.send({ type: pauses < 3 ? 'step' : 'resume' }), 5);
        }
      },
    });
    await h.result;
    // The pause lands inside a1's turn (before its model call); each step then completes exactly one turn.
    const marks = trace(events, ['run.paused', 'turn.completed']);
    expect(marks).toEqual([
      'run.paused',
      'turn.completed@a1',
      'run.paused',
      'turn.completed@a2',
      'run.paused',
      'turn.completed@a3',
      'turn.completed@a4',
    ]);
  });

  it('breakpoints pause before a node starts; clearing them lets the run through', async () => {
    const events: RunEvent[] = [];
    const h = runFlow(chain(3), 'go', {
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'run.paused') setTimeout(() => h.send({ type: 'resume' }), 5);
      },
    });
    h.send({ type: 'breakpoint', nodeId: 'a2', on: true });
    h.send({ type: 'breakpoint', nodeId: 'a3', on: true });
    h.send({ type: 'breakpoint', nodeId: 'a3', on: false });
    await h.result;
    const i = events.findIndex((e) => e.type === 'run.paused');
    expect(events[i]).toMatchObject({ reason: 'breakpoint at a2', nodeId: 'a2' });
    expect(events[i + 1]!.type).toBe('run.resumed');
    expect(events[i + 2]).toMatchObject({ type: 'node.started', nodeId: 'a2' });
    expect(events.filter((e) => e.type === 'run.paused')).toHaveLength(1);
  });

  it('inject puts a user message into the transcript and the target inbox (redirect)', async () => {
    const events: RunEvent[] = [];
    const h = runFlow(chain(2), 'go', {
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'node.completed' && e.nodeId === 'a1')
          h.send({ type: 'inject', text: 'change of plan', nodeId: 'a2' });
      },
    });
    await h.result;
    const m = messages(events);
    expect(m[2]).toMatchObject({ role: 'user', author: 'user', content: 'change of plan' });
  });

  it('a pause requested as a group-chat member finishes holds the LLM manager, which then reads the redirect', async () => {
    const { factory, requests } = recordingModels();
    const f = flow(
      [
        node('start', 'start'),
        node('room', 'team', {
          mode: 'groupChat',
          speaker: { strategy: 'llm', model: 'default' },
          termination: { maxTurns: 2 },
        }),
        agent('alice', {}, { parent: 'room' }),
        agent('bob', {}, { parent: 'room' }),
        node('end', 'end'),
      ],
      [edge('start', 'room'), edge('room', 'end')],
      [
        { node: 'room', json: { speaker: 'alice', reason: 'first' } },
        { node: 'room', json: { speaker: 'bob', reason: 'second' } },
        { fallback: true, text: 'hi' },
      ],
    );
    const events: RunEvent[] = [];
    const h = runFlow(f, 'go', {
      models: factory,
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'node.completed' && e.nodeId === 'alice') h.send({ type: 'pause' });
        if (e.type === 'run.paused')
          setTimeout(() => {
            h.send({ type: 'inject', text: 'focus on costs' });
            h.send({ type: 'resume' });
          }, 5);
      },
    });
    expect((await h.result).status).toBe('completed');
    assertEventsValid(events);
    const paused = events.findIndex((e) => e.type === 'run.paused');
    expect(paused).toBeGreaterThan(
      events.findIndex((e) => e.type === 'node.completed' && e.nodeId === 'alice'),
    );
    const managed = requests.filter((r) => r.nodeId === 'room');
    expect(managed[1]!.messages.at(-1)!.content).toBe('[user] focus on costs');
  });
});
