import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultModelFactory } from './factory.js';
import {
  createScriptedProvider,
  type FileScriptedProvider,
  parseScript,
  ScriptedProvider,
} from './scripted.js';
import { ModelError, type ModelRequest } from './types.js';

const req = (nodeId: string, extra: Partial<ModelRequest> = {}): ModelRequest => ({
  nodeId,
  messages: [{ role: 'user', content: 'hi' }],
  signal: new AbortController().signal,
  ...extra,
});

describe('scripted provider', () => {
  it('serves node-addressed entries in order, then general ones, then fallbacks', async () => {
    const p = new ScriptedProvider(
      parseScript(
        [
          { node: 'a', text: 'a1' },
          'g1',
          { node: 'a', text: 'a2' },
          { node: 'b', fallback: true, text: 'b-fallback' },
          { fallback: true, text: 'any-fallback' },
        ],
        'script',
      ),
    );
    expect((await p.complete(req('a'))).text).toBe('a1');
    expect((await p.complete(req('a'))).text).toBe('a2');
    expect((await p.complete(req('a'))).text).toBe('g1');
    expect((await p.complete(req('a'))).text).toBe('any-fallback');
    expect((await p.complete(req('b'))).text).toBe('b-fallback');
    expect(p.scripted).toBe(true);
  });

  it('produces tool calls, structured JSON, usage and streamed deltas', async () => {
    const p = new ScriptedProvider(
      parseScript(
        [
          {
            toolCalls: [
              { name: 't', args: { q: 1 } },
              { name: 'u', arguments: '{"bad' },
            ],
          },
          {
            json: { ok: true },
            usage: { promptTokens: 3, completionTokens: 4 },
            deltas: ['{"ok"', ':true}'],
          },
        ],
        's',
      ),
    );
    const r1 = await p.complete(req('x'));
    expect(r1.toolCalls).toEqual([
      { id: 'call_1_0', name: 't', arguments: '{"q":1}' },
      { id: 'call_1_1', name: 'u', arguments: '{"bad' },
    ]);
    expect(r1.finishReason).toBe('tool_calls');
    const deltas: string[] = [];
    const r2 = await p.complete(req('x', { onDelta: (d) => deltas.push(d) }));
    expect(JSON.parse(r2.text)).toEqual({ ok: true });
    expect(r2.usage).toEqual({ promptTokens: 3, completionTokens: 4 });
    expect(deltas).toEqual(['{"ok"', ':true}']);
  });

  it('fails with script_exhausted and scripted errors as typed ModelErrors', async () => {
    const p = new ScriptedProvider(
      parseScript([{ error: { code: 'rate_limited', message: 'slow down' } }], 's'),
    );
    await expect(p.complete(req('x'))).rejects.toMatchObject({ code: 'rate_limited' });
    const e = await p.complete(req('x')).catch((x) => x);
    expect(e).toBeInstanceOf(ModelError);
    expect(e.code).toBe('script_exhausted');
    expect(e.message).toContain('"x"');
  });

  it('repeat serves an entry several times; snapshot/restore continues the script', async () => {
    const p = new ScriptedProvider(parseScript([{ text: 'r', repeat: 2 }, 'next', 'last'], 's'));
    expect((await p.complete(req('x'))).text).toBe('r');
    const snap = p.snapshot();
    expect((await p.complete(req('x'))).text).toBe('r');
    expect((await p.complete(req('x'))).text).toBe('next');
    const q = new ScriptedProvider(parseScript([{ text: 'r', repeat: 2 }, 'next', 'last'], 's'));
    q.restore(JSON.parse(JSON.stringify(snap)));
    expect((await q.complete(req('x'))).text).toBe('r');
    expect((await q.complete(req('x'))).text).toBe('next');
  });

  it('an instant reply adds no macrotask; latency is cancellable', async () => {
    const p = new ScriptedProvider(parseScript([{ text: 'a', repeat: true }], 's'));
    let macrotaskRan = false;
    setImmediate(() => {
      macrotaskRan = true;
    });
    for (let i = 0; i < 100; i++) await p.complete(req('x'));
    expect(macrotaskRan).toBe(false);
    const slow = new ScriptedProvider(parseScript(['late'], 's'), { latencyMs: 60_000 });
    const ac = new AbortController();
    const pending = slow.complete(req('x', { signal: ac.signal }));
    ac.abort();
    await expect(pending).rejects.toMatchObject({ code: 'cancelled' });
  });

  it('reads a scriptFile relative to the flow directory (on the first call) and names bad entries', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-script-'));
    writeFileSync(join(dir, 'r.json'), JSON.stringify({ script: ['from file'] }));
    const p = createScriptedProvider(
      'm',
      { provider: 'scripted', script: ['inline'], scriptFile: 'r.json' },
      { baseDir: dir },
    ) as FileScriptedProvider;
    expect((await p.ready()).snapshot().served.length).toBe(2);
    expect((await p.complete(req('x'))).text).toBe('inline');
    expect((await p.complete(req('x'))).text).toBe('from file');
    expect(() => parseScript([{ text: 3 }], 'models.m.script')).toThrow('models.m.script[0].text');
    const missing = createScriptedProvider(
      'm',
      { provider: 'scripted', scriptFile: 'nope.json' },
      { baseDir: dir },
    );
    await expect(missing.complete(req('x'))).rejects.toMatchObject({
      code: 'bad_request',
      message: expect.stringMatching(
        /^models\.m\.scriptFile: "nope\.json" is refused: it cannot be read \(ENOENT\)/,
      ),
    });
    expect(() =>
      createScriptedProvider('m', { provider: 'scripted', scriptFile: '/etc/passwd' }, { baseDir: dir }),
    ).toThrow(/models\.m\.scriptFile: "\/etc\/passwd" is refused: .*not an absolute path/);
  });

  it('the default factory picks scripted, rejects unknown providers', () => {
    const ctx = { resolveEnv: (v: string | undefined) => v };
    expect(defaultModelFactory('m', { provider: 'scripted', script: [] }, ctx).scripted).toBe(true);
    expect(() => defaultModelFactory('m', { provider: 'nope' }, ctx)).toThrow('unknown provider "nope"');
    expect(defaultModelFactory('m', { provider: 'openai', model: 'x' }, ctx).scripted).toBe(false);
  });

  it('with latency, streams the deltas over the reply time instead of all at the end', async () => {
    const p = new ScriptedProvider(
      parseScript([{ text: 'one two three', deltas: ['one ', 'two ', 'three'] }], 's'),
      {
        latencyMs: 200,
      },
    );
    const start = performance.now();
    const at: Array<[string, number]> = [];
    const r = await p.complete(req('a', { onDelta: (d) => at.push([d, performance.now() - start]) }));
    const end = performance.now() - start;
    expect(at.map(([d]) => d).join('')).toBe(r.text);
    // The first piece well before the reply, each later than the one before, all before the reply.
    expect(at[0]![1]).toBeLessThan(end - 60);
    for (let i = 1; i < at.length; i++) expect(at[i]![1]).toBeGreaterThanOrEqual(at[i - 1]![1]);
    expect(at.at(-1)![1]).toBeLessThanOrEqual(end);
  });

  it('a cancelled streaming reply sends no more pieces', async () => {
    const p = new ScriptedProvider(parseScript([{ text: 'ab', deltas: ['a', 'b'] }], 's'), {
      latencyMs: 150,
    });
    const ac = new AbortController();
    const got: string[] = [];
    const done = p.complete(req('a', { signal: ac.signal, onDelta: (d) => got.push(d) }));
    setTimeout(() => ac.abort(), 70);
    await expect(done).rejects.toMatchObject({ code: 'cancelled' });
    await new Promise((r) => setTimeout(r, 150));
    expect(got).toEqual(['a']);
  });
});
