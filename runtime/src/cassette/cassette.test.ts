import type { RunEvent } from '@switchboard/schemas';
import { describe, expect, it } from 'vitest';
import { chain } from '../engine/testing/index.js';
import type { ModelRequest } from '../models/types.js';
import { canonicalRequest, firstDifference, hashOf } from './canonical.js';
import { compareEvents } from './compare.js';
import type { Cassette } from './file.js';
import { CassettePlayer } from './play.js';

const req = (nodeId: string, content: string): ModelRequest => ({
  nodeId,
  messages: [
    { role: 'system', content: 'You are a writer.' },
    { role: 'user', content },
  ],
  signal: new AbortController().signal,
});

describe('cassette keys', () => {
  it('the same request from another node, endpoint or key order finds the same key; a changed field does not', () => {
    const a = canonicalRequest(
      'default',
      { provider: 'openai', baseURL: 'http://a/v1', temperature: 0 },
      req('w', 'hi'),
    );
    const b = canonicalRequest('default', { temperature: 0, provider: 'scripted' }, req('other', 'hi'));
    expect(hashOf(a)).toBe(hashOf(b));
    const c = canonicalRequest('default', { provider: 'openai', temperature: 0.5 }, req('w', 'hi'));
    expect(hashOf(c)).not.toBe(hashOf(a));
    expect(firstDifference(a, c)).toMatchObject({
      path: 'params.temperature',
      recorded: '0',
      requested: '0.5',
    });
  });

  it('the first difference of two texts shows both around where they part', () => {
    const d = firstDifference(
      { messages: [{ content: 'Write a short reply.' }] },
      { messages: [{ content: 'Write a long reply.' }] },
    );
    expect(d).toEqual({
      path: 'messages[0].content',
      recorded: '"Write a short reply."',
      requested: '"Write a long reply."',
    });
  });
});

function cassette(replies: Array<[string, string]>): Cassette {
  return {
    format: 'switchboard-cassette',
    version: 1,
    recordedAt: '',
    flow: chain(1),
    input: 'x',
    scripted: { default: true },
    models: replies.map(([content, text]) => {
      const request = canonicalRequest('default', { provider: 'scripted' }, req('w', content));
      return {
        key: hashOf(request),
        nodeId: 'w',
        request,
        response: {
          text,
          toolCalls: [],
          usage: { promptTokens: 1, completionTokens: 1 },
          finishReason: 'stop',
          model: 'm',
        },
      };
    }),
    toolSets: [],
    tools: [],
    events: [],
    result: { status: 'completed' },
  };
}

describe('the player', () => {
  it('answers a request repeated with its recorded replies in order, then misses by name', async () => {
    const p = new CassettePlayer(
      cassette([
        ['hi', 'one'],
        ['hi', 'two'],
      ]),
    );
    const m = p.modelFactory()('default', { provider: 'scripted' }, { resolveEnv: () => undefined });
    expect(m.scripted).toBe(true);
    expect((await m.complete(req('w', 'hi'))).text).toBe('one');
    expect((await m.complete(req('w', 'hi'))).text).toBe('two');
    await expect(m.complete(req('w', 'hi'))).rejects.toThrow('recorded 2 time(s)');
    expect(p.abort.signal.aborted).toBe(true);
  });

  it('a request it does not hold names the node, the nearest request and the first difference', async () => {
    const p = new CassettePlayer(
      cassette([
        ['Summarize the report', 'ok'],
        ['Translate it', 'ok'],
      ]),
    );
    const m = p.modelFactory()('default', { provider: 'scripted' }, { resolveEnv: () => undefined });
    await expect(m.complete(req('w', 'Summarize the reports'))).rejects.toThrow(
      'cassette_miss at node "w": the cassette holds no reply for this model request; nearest recorded request: models[0] (node "w"), first difference at messages[1].content',
    );
    expect(p.miss).toMatchObject({
      code: 'cassette_miss',
      kind: 'model',
      nodeId: 'w',
      nearest: { index: 0 },
    });
  });
});

describe('comparing events', () => {
  const ev = (runId: string, seq: number, ts: number, extra: Record<string, unknown> = {}) =>
    ({ type: 'node.started', nodeId: 'a', runId, seq, ts, ...extra }) as unknown as RunEvent;
  it('ignores timestamps, durations and run ids, and names the first difference', () => {
    expect(compareEvents([ev('r1', 1, 5, { durationMs: 3 })], [ev('r2', 1, 9, { durationMs: 7 })]).same).toBe(
      true,
    );
    const c = compareEvents(
      [ev('r1', 1, 5), ev('r1', 2, 5)],
      [ev('r2', 1, 9), ev('r2', 2, 9, { nodeId: 'b' })],
    );
    expect(c.same).toBe(false);
    expect(c.first).toMatchObject({
      index: 1,
      difference: { path: 'events[1].nodeId', recorded: '"a"', requested: '"b"' },
    });
    // A nested run's id is not the parent's: numbering keeps them apart.
    expect(
      compareEvents(
        [ev('r1', 1, 0), ev('c1', 1, 0, { parentRunId: 'r1' })],
        [ev('r2', 1, 0), ev('r2', 1, 0, { parentRunId: 'r2' })],
      ).same,
    ).toBe(false);
  });
});

describe('reading a cassette', () => {
  it('refuses reserved keys and names what is missing', async () => {
    const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const { readCassette } = await import('./file.js');
    const dir = mkdtempSync(join(tmpdir(), 'sb-cassette-'));
    try {
      const good = cassette([['hi', 'one']]);
      const f = join(dir, 'c.json');
      writeFileSync(f, JSON.stringify(good).replace('"scripted":{', '"scripted":{"__proto__":{"x":1},'));
      const r = await readCassette(f);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.message).toContain('/scripted/__proto__');
      writeFileSync(f, JSON.stringify({ ...good, models: [{ key: 'k' }] }));
      const m = await readCassette(f);
      expect(!m.ok && m.message).toContain('/models/0: expected { key, nodeId, request, response | error }');
      writeFileSync(f, JSON.stringify(good));
      expect((await readCassette(f)).ok).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
